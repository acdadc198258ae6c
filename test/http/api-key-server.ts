// What the API key tests share: the example server's order of doors and login protection on a
// real port, the key CLI run in another process, and a chat through the official `openai` client.
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import OpenAI from "openai";
import { createGateway, type Gateway } from "chat-gateway";
import { createDoors } from "chat-gateway/doors";
import { createLoginProtection, type LoginProtection } from "chat-gateway/login";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { HASHES, runUserCliProcess, tempDir, writeUsers } from "./helpers.js";

const quiet = { info() {}, warn() {}, error() {} };

export interface KeyServer {
  url: string;
  ws: string;
  gateway: Gateway;
  protection: LoginProtection;
  close(): Promise<void>;
}

/** The example server's order: the doors first (they check their own bearer), then login protection. */
export async function startKeyServer(usersFile: string): Promise<KeyServer> {
  const protection = createLoginProtection({ usersFile, logger: quiet });
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: demoRuntime({ delayMs: 0 }),
    authenticator: protection.authenticator(),
    logger: quiet,
  });
  await gateway.start();
  const doors = createDoors(gateway, { authorize: (req) => protection.authorizeUpgrade(req) });
  const server = http.createServer(async (req, res) => {
    if (await doors.handle(req, res)) return;
    if (await protection.handle(req, res)) return;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ app: req.url }));
  });
  const transport: WebSocketTransport = attachWebSocket(gateway, {
    server,
    path: "/ws/gateway",
    authorizeUpgrade: (req) => protection.authorizeUpgrade(req),
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    ws: `ws://127.0.0.1:${port}/ws/gateway`,
    gateway,
    protection,
    async close() {
      await gateway.close();
      await transport.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await protection.close();
    },
  };
}

/** One chat completion through the official client with `apiKey`: the answer's text. */
export async function askWithKey(url: string, apiKey: string, text = "hello through a key"): Promise<string> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
  const answer = await client.chat.completions.create({
    model: "default",
    messages: [{ role: "user", content: text }],
  });
  return answer.choices[0]!.message.content ?? "";
}

const userFlag = (user?: string) => (user === undefined ? [] : ["--user", user]);

/** `key add NAME [--user USER]` in another process: the key printed once, alone on stdout. */
export async function cliAdd(file: string, user: string | undefined, name: string): Promise<string> {
  const run = await runUserCliProcess(file, ["key", "add", name, ...userFlag(user)], undefined);
  expect(run.code, run.err).toBe(0);
  const match = /^key: (cgk_[A-Za-z0-9_-]{43})\n$/.exec(run.out);
  expect(match, run.out).not.toBeNull();
  return match![1]!;
}

/** `key list [--user USER]`: one row a key, [user, key_id, name, "created <instant>"]. */
export async function cliList(file: string, user?: string): Promise<string[][]> {
  const run = await runUserCliProcess(file, ["key", "list", ...userFlag(user)], undefined);
  expect(run.code, run.err).toBe(0);
  return run.out
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split("\t"));
}

/** Per test: a temporary folder whose users file holds alice and bob, and a key server to start on it, closed after. */
export function keyFixture() {
  let dir = "";
  let cleanup: () => Promise<void> = async () => {};
  let server: KeyServer | undefined;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    await writeUsers(path.join(dir, "users.json"), { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await cleanup();
  });
  return {
    get dir() {
      return dir;
    },
    get file() {
      return path.join(dir, "users.json");
    },
    /** The running server; only after `start()`. */
    get srv(): KeyServer {
      if (server === undefined) throw new Error("start() the key server first");
      return server;
    },
    async start(): Promise<KeyServer> {
      server = await startKeyServer(path.join(dir, "users.json"));
      return server;
    },
  };
}
