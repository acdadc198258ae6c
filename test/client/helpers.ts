// The example server in-process on a temp data dir, and a client that records every event.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import { createGatewayClient, type GatewayClient, type GatewayClientOptions } from "chat-gateway/client";
import type { ServerFrame } from "chat-gateway/protocol";
import { startServer, type RunningServer } from "../../examples/server/server.js";
import { checkingWebSocket } from "../fixtures/frame-check.js";

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "cg-client-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** The example server (sql.js storage, media files, login off unless `usersFile` has users). */
export function startExample(
  dataDir: string,
  port = 0,
  usersFile = path.join(dataDir, "users.json"),
): Promise<RunningServer> {
  return startServer(
    { port, host: "127.0.0.1", dataDir, usersFile, service: "gateway", memory: false },
    () => undefined,
  );
}

export function wsUrl(server: { url: string }): string {
  return `${server.url.replace(/^http/, "ws")}/ws/gateway`;
}

/** A client with fast reconnects that keeps every frame it emits; every frame it receives is checked against the protocol's structs. */
export function recordingClient(options: GatewayClientOptions): { client: GatewayClient; frames: ServerFrame[] } {
  const client = createGatewayClient({
    reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
    pingIntervalMs: 0,
    WebSocket: checkingWebSocket(Boolean(options.headers)),
    ...options,
  });
  const frames: ServerFrame[] = [];
  client.on("frame", (frame) => frames.push(frame));
  return { client, frames };
}

/** Resolve when `check` passes, polling; fail with `what` after `ms`. */
export async function until<T>(check: () => T | undefined | false, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Things to undo after each test of the file that calls this, last first. */
export function cleanupAfterEach(): Array<() => Promise<void> | void> {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return cleanups;
}

/** The example server on a fresh temp dir, both gone after the test. */
export async function exampleServer(cleanups: Array<() => Promise<void> | void>): Promise<RunningServer> {
  const { dir, cleanup } = await tempDir();
  const server = await startExample(dir);
  cleanups.push(cleanup, () => server.close());
  return server;
}

/** A recording client with a fresh device id, closed after the test. */
export function testClient(
  cleanups: Array<() => Promise<void> | void>,
  url: string,
  options: Partial<GatewayClientOptions> = {},
) {
  const made = recordingClient({ url, deviceId: `dev-${Math.random().toString(36).slice(2)}`, ...options });
  cleanups.push(() => made.client.close());
  return made;
}
