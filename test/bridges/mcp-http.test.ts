// The MCP bridge over Streamable HTTP: the SDK's own client against the handler on a real
// gateway's server, each request a door device of its bearer (docs/PROTOCOL.md §20.2).
import { describe, expect, test } from "vitest";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { mcpServerPerTest } from "./mcp-harness.js";
import { checkAsk, checkBadLanes, checkSendReadList, checkToolList } from "./mcp-tools.js";

const start = mcpServerPerTest();

async function connectHttp(origin: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "mcp-http-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

describe("MCP over Streamable HTTP at /mcp", () => {
  test("the five tools, progress while an answer streams, and an ask answered", async () => {
    const server = await start();
    const client = await connectHttp(server.origin, "ann");
    await checkToolList(client);
    await checkSendReadList(client, server);
    await checkAsk(client);
    await checkBadLanes(client, server);
    await client.close();
  }, 90_000);

  test("no bearer, or an unknown one, is 401 in OpenAI's error shape; the SDK's client fails to connect", async () => {
    const server = await start();
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const extras: Array<Record<string, string>> = [{}, { authorization: "Bearer mallory" }];
    for (const extra of extras) {
      const response = await fetch(`${server.origin}/mcp`, { method: "POST", headers: { ...headers, ...extra }, body });
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe("authentication_error");
    }
    await expect(connectHttp(server.origin, "mallory")).rejects.toThrow();
  });
});
