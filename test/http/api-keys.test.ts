// API keys of the doors (docs/PROTOCOL.md §19.1): made by the real CLI in another process or over
// HTTP, stored only as hashes in a 0600 keys.json, accepted by the doors (through the official
// `openai` client) and by hello, and by no other route; revoked, removed with their user and on a
// password change; at most 20 per user, also when two processes add at once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createGateway, type Gateway } from "chat-gateway";
import { createDoors } from "chat-gateway/doors";
import { apiKeyDigest, createLoginProtection, type LoginProtection } from "chat-gateway/http";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { Client } from "../gateway/harness.js";
import { bearer, HASHES, login, request, runUserCliProcess, tempDir, writeUsers } from "./helpers.js";

const quiet = { info() {}, warn() {}, error() {} };

interface KeyServer {
  url: string;
  ws: string;
  gateway: Gateway;
  protection: LoginProtection;
  close(): Promise<void>;
}

/** The example server's order: the doors first (they check their own bearer), then login protection. */
async function startKeyServer(usersFile: string): Promise<KeyServer> {
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

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
let srv: KeyServer | undefined;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
  await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
});
afterEach(async () => {
  await srv?.close();
  srv = undefined;
  await cleanup();
});

const keysFile = () => path.join(dir, "keys.json");

function openai(apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${srv!.url}/v1`, apiKey, maxRetries: 0 });
}

async function ask(apiKey: string, text = "hello through a key"): Promise<string> {
  const answer = await openai(apiKey).chat.completions.create({
    model: "default",
    messages: [{ role: "user", content: text }],
  });
  return answer.choices[0]!.message.content ?? "";
}

/** `key add <user>` in another process: the key printed once on stdout. */
async function cliAdd(user: string, label?: string): Promise<string> {
  const run = await runUserCliProcess(file, ["key", "add", user, ...(label ? ["--label", label] : [])], undefined);
  expect(run.code, run.err).toBe(0);
  const match = /^key: (cgk_[A-Za-z0-9_-]{43})\n$/.exec(run.out);
  expect(match, run.out).not.toBeNull();
  return match![1]!;
}

async function cliList(user: string): Promise<string[][]> {
  const run = await runUserCliProcess(file, ["key", "list", user], undefined);
  expect(run.code, run.err).toBe(0);
  return run.out
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split("\t"));
}

async function signIn(user = "alice"): Promise<string> {
  const reply = await login(srv!.url, user, `${user}-password`);
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

describe("API keys - the CLI", () => {
  it("add prints the key once and stores only its hash in a 0600 keys.json; list shows it; it works on the doors", async () => {
    srv = await startKeyServer(file);
    const key = await cliAdd("alice", "laptop");
    const text = await readFile(keysFile(), "utf8");
    expect(text).not.toContain(key);
    expect(text).toContain(apiKeyDigest(key));
    expect((await stat(keysFile())).mode & 0o777).toBe(0o600);
    const listed = await cliList("alice");
    expect(listed).toHaveLength(1);
    expect(listed[0]![1]).toBe("laptop");
    expect(listed[0]!.join("\t")).not.toContain(key);
    expect(await cliList("bob")).toEqual([]);
    // Made while the server runs: taken at once.
    expect(await ask(key)).not.toBe("");
  });

  it("a revoked key is 401 on the doors, and the other key of the user still works", async () => {
    srv = await startKeyServer(file);
    const [first, second] = [await cliAdd("alice"), await cliAdd("alice")];
    expect(await ask(first)).not.toBe("");
    const id = (await cliList("alice")).find((row) => row[0] !== undefined)![0]!;
    const run = await runUserCliProcess(file, ["key", "revoke", "alice", id], undefined);
    expect(run.code, run.err).toBe(0);
    const left = await cliList("alice");
    expect(left).toHaveLength(1);
    const stillWorks = left[0]![0] === id ? first : second;
    const revoked = stillWorks === first ? second : first;
    await expect(ask(revoked)).rejects.toMatchObject({ status: 401 });
    expect(await ask(stillWorks)).not.toBe("");
    const again = await runUserCliProcess(file, ["key", "revoke", "alice", id], undefined);
    expect(again.code).toBe(1);
    expect(again.err).toContain("has no key");
  });

  it("an unknown user or a bad command is refused", async () => {
    expect((await runUserCliProcess(file, ["key", "add", "carol"], undefined)).code).toBe(1);
    expect((await runUserCliProcess(file, ["key", "list", "alice", "extra"], undefined)).code).toBe(2);
    expect((await runUserCliProcess(file, ["key", "revoke", "alice", "id", "--label", "x"], undefined)).code).toBe(2);
  });

  it("two processes adding at once both land", async () => {
    const keys = await Promise.all([cliAdd("alice", "one"), cliAdd("alice", "two")]);
    expect(new Set(keys).size).toBe(2);
    const labels = (await cliList("alice")).map((row) => row[1]).sort();
    expect(labels).toEqual(["one", "two"]);
  });

  it("a key is removed with its user, and on a password change; its socket closes", async () => {
    srv = await startKeyServer(file);
    const [alices, bobs] = [await cliAdd("alice"), await cliAdd("bob")];
    const socket = await Client.connect(srv.ws, { token: alices }, bearer(alices));
    const passwd = await runUserCliProcess(file, ["user", "set-password", "alice"], "a-new-password\n");
    expect(passwd.code, passwd.err).toBe(0);
    await expect(ask(alices)).rejects.toMatchObject({ status: 401 });
    expect(await socket.closedPromise).toBe(4401);
    expect(await cliList("alice")).toEqual([]);
    const removed = await runUserCliProcess(file, ["user", "remove", "bob"], undefined);
    expect(removed.code, removed.err).toBe(0);
    await expect(ask(bobs)).rejects.toMatchObject({ status: 401 });
    expect(await readFile(keysFile(), "utf8")).not.toContain(apiKeyDigest(bobs));
  });
});

describe("API keys - where a key is a credential", () => {
  it("hello.token takes a key, as a device of its owner; a made-up key is refused", async () => {
    srv = await startKeyServer(file);
    const key = await cliAdd("alice");
    // The upgrade carries the key as its bearer too, as every WebSocket client does with login on.
    const device = await Client.connect(srv.ws, { token: key }, bearer(key));
    const viaDoor = await ask(key, "seen on the socket");
    expect(viaDoor).not.toBe("");
    // The same owner: the socket saw the door's message.
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.text).toBe("seen on the socket");
    await device.close();
    const forged = `cgk_${"A".repeat(43)}`;
    await expect(Client.connect(srv.ws, { token: forged }, bearer(forged))).rejects.toThrow(/401/);
    await expect(ask(forged)).rejects.toMatchObject({ status: 401 });
  });

  it("no other route of the web API takes a key: devices, keys, pairing, the gate", async () => {
    srv = await startKeyServer(file);
    const key = await cliAdd("alice");
    for (const [method, where] of [
      ["GET", "/api/devices"],
      ["GET", "/api/keys"],
      ["POST", "/api/keys"],
      ["POST", "/api/devices/pair"],
      ["GET", "/api/anything"],
    ] as const) {
      const reply = await request(srv.url, {
        method,
        path: where,
        headers: { ...bearer(key), "content-type": "application/json" },
        body: method === "POST" ? "{}" : undefined,
      });
      expect(reply.status, `${method} ${where}`).toBe(401);
    }
  });
});

describe("API keys - over HTTP", () => {
  it("a signed-in user makes, lists and revokes a key; the key is shown once", async () => {
    srv = await startKeyServer(file);
    const session = await signIn();
    const made = await request(srv.url, {
      method: "POST",
      path: "/api/keys",
      headers: { ...bearer(session), "content-type": "application/json" },
      body: JSON.stringify({ label: "open webui" }),
    });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({ label: "open webui", key: expect.stringMatching(/^cgk_/) });
    expect(await ask(made.body.key)).not.toBe("");
    const listed = await request(srv.url, { path: "/api/keys", headers: bearer(session) });
    expect(listed.body.keys).toEqual([{ key_id: made.body.key_id, label: "open webui", created: expect.any(Number) }]);
    expect(listed.text).not.toContain(made.body.key);
    // Another user sees none of them, and cannot revoke them.
    const bobs = await signIn("bob");
    expect((await request(srv.url, { path: "/api/keys", headers: bearer(bobs) })).body.keys).toEqual([]);
    const path_ = `/api/keys/${encodeURIComponent(made.body.key_id)}`;
    expect((await request(srv.url, { method: "DELETE", path: path_, headers: bearer(bobs) })).status).toBe(404);
    expect((await request(srv.url, { method: "DELETE", path: path_, headers: bearer(session) })).status).toBe(200);
    await expect(ask(made.body.key)).rejects.toMatchObject({ status: 401 });
  });

  it("a paired device's token needs the password to make a key", async () => {
    srv = await startKeyServer(file);
    const session = await signIn();
    const json = { "content-type": "application/json" };
    const pair = await request(srv.url, {
      method: "POST",
      path: "/api/devices/pair",
      headers: { ...bearer(session), ...json },
      body: "{}",
    });
    const redeemed = await request(srv.url, {
      method: "POST",
      path: "/api/devices/redeem",
      headers: json,
      body: JSON.stringify({ code: pair.body.code, confirm: true }),
    });
    expect(redeemed.status).toBe(200);
    const device = redeemed.body.token as string;
    const post = (body: unknown) =>
      request(srv!.url, {
        method: "POST",
        path: "/api/keys",
        headers: { ...bearer(device), ...json },
        body: JSON.stringify(body),
      });
    expect((await post({})).status).toBe(403);
    expect((await post({ password: "wrong" })).status).toBe(401);
    expect((await post({ password: "alice-password" })).status).toBe(200);
  });

  it("at most 20 keys a user: the 21st is refused over HTTP (429) and by the CLI (exit 1)", async () => {
    srv = await startKeyServer(file);
    const session = await signIn();
    const post = () =>
      request(srv!.url, {
        method: "POST",
        path: "/api/keys",
        headers: { ...bearer(session), "content-type": "application/json" },
        body: "{}",
      });
    const made = await Promise.all(Array.from({ length: 20 }, post));
    expect(made.map((r) => r.status)).toEqual(Array(20).fill(200));
    const over = await post();
    expect(over.status).toBe(429);
    const cli = await runUserCliProcess(file, ["key", "add", "alice"], undefined);
    expect(cli.code).toBe(1);
    expect(cli.err).toContain("20 API keys");
    expect(cli.out).toBe("");
  });
});
