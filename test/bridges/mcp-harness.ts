// A real gateway for the MCP bridge's tests: its WebSocket and the MCP handler at /mcp on one
// http.Server on 127.0.0.1, two owners by token, and an agent that streams, waits, and asks.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";
import { createGateway, type Gateway, type RuntimeEvent, type TurnInput, tokenAuthenticator } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import { createMcpHttpHandler } from "chat-gateway/mcp";
import { gate, scriptedRuntime } from "../gateway/runtimes.js";

export interface McpTestServer {
  gateway: Gateway;
  origin: string;
  wsUrl: string;
  /** Lets the streaming answer ("stream …") finish once the test saw its progress. */
  release(): void;
  close(): Promise<void>;
}

const quietLogger = { info() {}, warn() {}, error() {} };

/**
 * The agent: "stream X" answers "first " then, once released, "X"; "deploy" asks an approval and
 * answers with the choice; anything else is echoed.
 */
function agent(release: { wait: Promise<void> }) {
  return scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    const text = input.message.text;
    if (text.startsWith("stream ")) {
      yield { type: "text", delta: "first " };
      await release.wait;
      yield { type: "text", delta: text.slice("stream ".length) };
    } else if (text === "deploy") {
      const answer = await input.ask({ kind: "approval", title: "Deploy?", tool: { name: "deploy", args: {} } });
      yield { type: "text", delta: answer.option_id === "approve" ? "deployed" : "not deployed" };
    } else yield { type: "text", delta: `echo: ${text}` };
  });
}

export async function startMcpServer(): Promise<McpTestServer> {
  const released = gate();
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: agent(released),
    logger: quietLogger,
    authenticator: tokenAuthenticator({ ann: "ann", bob: "bob" }),
  });
  await gateway.start();
  const mcp = createMcpHttpHandler(gateway);
  const server = http.createServer((req, res) => {
    if (req.url === "/mcp") void mcp(req, res);
    else res.writeHead(404).end();
  });
  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    gateway,
    origin: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws/gateway`,
    release: released.release,
    async close() {
      await gateway.close();
      await transport.close();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A server per test, closed after it. */
export function mcpServerPerTest(): () => Promise<McpTestServer> {
  const open: McpTestServer[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  return async () => {
    const s = await startMcpServer();
    open.push(s);
    return s;
  };
}
