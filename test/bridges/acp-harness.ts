// The ACP bridge as an editor runs it: the real binary (`examples/server/main.ts acp`) as a child
// process on stdio, driven with the ACP SDK's client side, against a real gateway on 127.0.0.1
// (its WebSocket adapter, a token authenticator, a scripted runtime standing in for the agent).
import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import {
  client,
  ndJsonStream,
  PROTOCOL_VERSION,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from "@agentclientprotocol/sdk";
import { afterEach } from "vitest";
import { createGateway, tokenAuthenticator, type AgentRuntime, type Gateway, type GatewayOptions } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

const root = join(import.meta.dirname, "..", "..");
const quietLogger = { info() {}, warn() {}, error() {} };

/** A gateway on a free port whose one account, "ann", logs in with the token "ann-token". */
export interface GatewayServer {
  gateway: Gateway;
  wsUrl: string;
  close(): Promise<void>;
}

export async function startGatewayServer(
  runtime: AgentRuntime,
  options: Partial<GatewayOptions> = {},
): Promise<GatewayServer> {
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime,
    logger: quietLogger,
    authenticator: tokenAuthenticator({ "ann-token": "ann" }),
    ...options,
  } as GatewayOptions);
  await gateway.start();
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    gateway,
    wsUrl: `ws://127.0.0.1:${port}/ws/gateway`,
    async close() {
      await gateway.close();
      await transport.close();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers a permission request the way a test wants (default: the first option). */
export type PermissionAnswer = (
  request: RequestPermissionRequest,
  signal: AbortSignal,
) => Promise<RequestPermissionResponse>;

/** A running bridge and the editor's side of its connection. */
export interface Bridge {
  child: ChildProcess;
  connection: ClientConnection;
  /** Every `session/update`, in order. */
  updates: SessionNotification[];
  /** Every permission request, in order. */
  permissions: RequestPermissionRequest[];
  /** What the bridge wrote to stdout and to stderr, as text. */
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** Sets how the next permission requests are answered. */
  answerPermissions(answer: PermissionAnswer): void;
}

/** The command line of `examples/server/main.ts acp args`. */
export function acpCommand(args: string[]): [string, string[]] {
  return exampleServerCommand(["acp", ...args]);
}

/** Starts the bridge for `wsUrl` with `token` and connects the SDK's client to its stdio. */
export function startBridge(wsUrl: string, token: string, args: string[] = []): Bridge {
  return startBridgeWith(["--url", wsUrl, ...args], { GATEWAY_TOKEN: token });
}

/** Starts `acp args` with `env` added to this process's and connects the SDK's client to its stdio. */
export function startBridgeWith(args: string[], env: Record<string, string>): Bridge {
  const child = spawn(...acpCommand(args), {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const updates: SessionNotification[] = [];
  const permissions: RequestPermissionRequest[] = [];
  let answer: PermissionAnswer = async (request) => ({
    outcome: { outcome: "selected", optionId: request.options[0]!.optionId },
  });
  const app = client({ name: "test-editor" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
    })
    .onRequest("session/request_permission", ({ params, signal }) => {
      permissions.push(params);
      return answer(params, signal);
    });
  const connection = app.connect(
    ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    ),
  );
  return {
    child,
    connection,
    updates,
    permissions,
    stdout: () => out,
    stderr: () => err,
    exited,
    answerPermissions: (next) => (answer = next),
  };
}

/** `initialize` as an editor sends it. */
export function initialize(bridge: Bridge) {
  return bridge.connection.agent.request("initialize", {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "test-editor", version: "1.0.0" },
  });
}

/** A gateway and bridges per test, all closed after it. */
export function perTest() {
  const servers: GatewayServer[] = [];
  const bridges: Bridge[] = [];
  afterEach(async () => {
    for (const bridge of bridges.splice(0)) {
      bridge.child.stdin!.end();
      if (bridge.child.exitCode === null) bridge.child.kill("SIGTERM");
      await bridge.exited;
    }
    for (const server of servers.splice(0)) await server.close();
  });
  return {
    async gateway(runtime: AgentRuntime, options: Partial<GatewayOptions> = {}) {
      const server = await startGatewayServer(runtime, options);
      servers.push(server);
      return server;
    },
    bridge(wsUrl: string, token = "ann-token", args: string[] = []) {
      const bridge = startBridge(wsUrl, token, args);
      bridges.push(bridge);
      return bridge;
    },
    bridgeWith(args: string[], env: Record<string, string>) {
      const bridge = startBridgeWith(args, env);
      bridges.push(bridge);
      return bridge;
    },
  };
}

/** Waits until `check` passes (the bridge is another process: its updates come when they come). */
export async function eventually<T>(check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The text of a run of chunks of one kind, joined. */
export function textOf(updates: SessionNotification[], kind: string): string {
  return updates
    .map((n) => n.update)
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => (u as { content: { type: string; text?: string } }).content.text ?? "")
    .join("");
}
