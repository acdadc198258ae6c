// The MCP bridge with the example server as a person runs it, login on: a signed-in token is the
// credential for /mcp and for `chat-gateway mcp`; without one, /mcp is 401 (docs/PROTOCOL.md §20.2).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { runServerCli, startServerProcess } from "../example-server-process.js";
import { dataOf, textOf } from "./mcp-tools.js";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
});

// A child process with bcrypt at cost 12 behind it: generous on a busy machine.
describe("MCP on the example server", { timeout: 120_000 }, () => {
  it("/mcp and the stdio bridge take a signed-in token; /mcp without one is 401", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-mcp-"));
    const env = { GATEWAY_DATA_DIR: dataDir };
    const server = await startServerProcess(env);
    child = server.child;
    expect(runServerCli(["user", "add", "alice", "--no-adopt"], env, "correct horse\n").status).toBe(0);
    const login = await fetch(`${server.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: "correct horse" }),
    });
    const { token } = (await login.json()) as { token: string };

    const none = await fetch(`${server.base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(none.status).toBe(401);

    const http = new Client({ name: "example-http", version: "1.0.0" });
    await http.connect(
      new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    const sent = await http.callTool({ name: "send_message", arguments: { text: "hello" } });
    expect(textOf(sent)).toBe("You said: hello");
    const lane = dataOf(sent).lane as string;
    await http.close();

    const stdio = new Client({ name: "example-stdio", version: "1.0.0" });
    await stdio.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: exampleServerCommand(["mcp", "--url", server.base, "--token", token])[1],
        cwd: join(import.meta.dirname, "..", ".."),
        stderr: "pipe",
      }),
    );
    const read = await stdio.callTool({ name: "read_conversation", arguments: { lane } });
    expect((dataOf(read).messages as Array<{ text: string }>).map((m) => m.text)).toEqual(["hello", "You said: hello"]);
    await stdio.close();
  });
});
