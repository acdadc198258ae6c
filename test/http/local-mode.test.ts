// Open mode is local mode: with login off, pages of other sites and DNS-rebound host names cannot
// use a gateway on this machine; login posts refuse cross-site forms. Real servers on 127.0.0.1.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createGateway } from "chat-gateway";
import { createLoginProtection } from "chat-gateway/login";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, type WebSocketOptions } from "chat-gateway/ws";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { HASHES, request, startServer, tempDir, writeUsers, type TestServer } from "./helpers.js";

/** The HTTP status of an upgrade: 101 once open (then closed again), else the refusal's. */
function upgrade(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on("open", () => {
      ws.close();
      resolve(101);
    });
    ws.on("unexpected-response", (_req, res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    ws.on("error", (e) => (e.message.includes("Unexpected server response") ? undefined : reject(e)));
  });
}

describe("ws adapter without the http adapter (library users)", () => {
  let harness: Harness | undefined;
  const start = async (ws: WebSocketOptions = {}) => (harness = await startGateway({}, ws));
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("an upgrade from a page of another origin is refused with 403 and never reaches hello", async () => {
    const { url } = await start();
    const port = new URL(url).port;
    expect(await upgrade(url, { origin: "https://evil.example" })).toBe(403);
    expect(await upgrade(url, { origin: "null" })).toBe(403);
    // The server's own origin passes.
    expect(await upgrade(url, { origin: `http://127.0.0.1:${port}` })).toBe(101);
  });

  it("a Host that is not a loopback name or the server's address (DNS rebinding) is refused with 421", async () => {
    const { url } = await start();
    const port = new URL(url).port;
    expect(await upgrade(url, { host: `rebind.attacker.example:${port}` })).toBe(421);
    expect(
      await upgrade(url, { host: `rebind.attacker.example:${port}`, origin: `http://rebind.attacker.example:${port}` }),
    ).toBe(421);
    for (const host of [`localhost:${port}`, `app.localhost:${port}`, `127.0.0.1:${port}`])
      expect(await upgrade(url, { host })).toBe(101);
  });

  it("a client without Origin (not a browser) connects and chats", async () => {
    const { url } = await start();
    const client = await Client.connect(url);
    expect((await client.say({ chat_id: "default", text: "hello" })).final.type).toMatch(/^message/);
    await client.close();
  });

  it('allowedOrigins and allowedHosts let configured sites in, "*" lets every one in; bad entries are a TypeError', async () => {
    const { url } = await start({ allowedOrigins: ["https://app.example.com"], allowedHosts: ["chat.example.com"] });
    expect(await upgrade(url, { origin: "https://app.example.com" })).toBe(101);
    expect(await upgrade(url, { host: "chat.example.com", origin: "https://app.example.com" })).toBe(101);
    expect(await upgrade(url, { origin: "https://other.example.com" })).toBe(403);
    await harness!.close();
    const { url: open } = await start({ allowedOrigins: "*", allowedHosts: "*" });
    expect(await upgrade(open, { origin: "https://evil.example", host: "rebind.attacker.example" })).toBe(101);
    const gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime() });
    expect(() => attachWebSocket(gateway, { allowedOrigins: ["not an origin"] })).toThrow(TypeError);
    expect(() => attachWebSocket(gateway, { allowedHosts: ["host:8080"] })).toThrow(TypeError);
    expect(() => attachWebSocket(gateway, { allowedHosts: "everything" as never })).toThrow(TypeError);
  });
});

describe("login protection with login off", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let file: string;
  let harness: Harness | undefined;
  let srv: TestServer | undefined;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    file = path.join(dir, "users.json");
  });
  afterEach(async () => {
    await harness?.close();
    await srv?.close();
    harness = srv = undefined;
    await cleanup();
  });

  /** A gateway whose ws adapter is gated by the protection, as the example server mounts it. */
  async function gated(options: { allowedOrigins?: string[]; allowedHosts?: string[] } = {}): Promise<string> {
    const protection = createLoginProtection({ usersFile: file, log: () => undefined, ...options });
    harness = await startGateway(
      { authenticator: protection.authenticator() },
      { authorizeUpgrade: (req) => protection.authorizeUpgrade(req) },
    );
    const close = harness.close;
    harness.close = async () => {
      await close();
      await protection.close();
    };
    return harness.url;
  }

  it("a WebSocket upgrade with a foreign Origin gets 403; no Origin and the own origin pass", async () => {
    const url = await gated();
    const port = new URL(url).port;
    expect(await upgrade(url, { origin: "https://evil.example" })).toBe(403);
    expect(await upgrade(url)).toBe(101);
    expect(await upgrade(url, { origin: `http://localhost:${port}`, host: `localhost:${port}` })).toBe(101);
  });

  it("an upgrade or an HTTP request naming a foreign Host gets 421; configured hosts pass", async () => {
    const url = await gated({ allowedHosts: ["chat.example.com"] });
    expect(await upgrade(url, { host: "rebind.attacker.example" })).toBe(421);
    expect(await upgrade(url, { host: "chat.example.com" })).toBe(101);
    srv = await startServer({ usersFile: file });
    for (const p of ["/api/auth/status", "/api/chats", "/index.html"]) {
      const refused = await request(srv.url, { path: p, headers: { host: `rebind.attacker.example:${srv.port}` } });
      expect(refused.status).toBe(421);
      expect(refused.body.error).toMatch(/host not allowed/);
    }
    expect((await request(srv.url, { path: "/api/auth/status" })).status).toBe(200);
    expect((await request(srv.url, { path: "/index.html", headers: { host: `localhost:${srv.port}` } })).status).toBe(
      200,
    );
  });

  it("with login on, the Host rule is off: a session is required instead", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file });
    expect((await request(srv.url, { path: "/api/auth/status", headers: { host: "chat.example.com" } })).status).toBe(
      200,
    );
    expect((await request(srv.url, { path: "/api/chats", headers: { host: "chat.example.com" } })).status).toBe(401);
  });

  it("allowedHosts entries are validated at construction", () => {
    expect(() => createLoginProtection({ usersFile: file, allowedHosts: ["https://chat.example.com"] })).toThrow(
      TypeError,
    );
    expect(() => createLoginProtection({ usersFile: file, allowedOrigins: ["chat.example.com"] })).toThrow(TypeError);
  });
});

describe("login CSRF", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let srv: TestServer | undefined;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    const file = path.join(dir, "users.json");
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file, allowedOrigins: ["https://app.example.com"] });
  });
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
    await cleanup();
  });
  const body = JSON.stringify({ username: "alice", password: "alice-password" });
  const post = (p: string, headers: Record<string, string>) =>
    request(srv!.url, { method: "POST", path: p, headers, body });

  it("a login posted as text/plain (or a form) is 415 and sets no cookie", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const out = await post("/api/auth/login", { "content-type": type });
      expect(out.status).toBe(415);
      expect(out.headers["set-cookie"]).toBeUndefined();
    }
    expect((await request(srv!.url, { method: "POST", path: "/api/auth/login", body })).status).toBe(415);
    expect((await post("/api/auth/logout", { "content-type": "text/plain" })).status).toBe(415);
  });

  it("a login or logout from a foreign Origin is 403 and sets no cookie; own and allowed origins sign in", async () => {
    const foreign = await post("/api/auth/login", {
      "content-type": "application/json",
      origin: "https://evil.example",
    });
    expect(foreign.status).toBe(403);
    expect(foreign.headers["set-cookie"]).toBeUndefined();
    expect(
      (await post("/api/auth/logout", { "content-type": "application/json", origin: "https://evil.example" })).status,
    ).toBe(403);
    for (const origin of [srv!.url, "https://app.example.com"]) {
      const ok = await post("/api/auth/login", { "content-type": "application/json; charset=utf-8", origin });
      expect(ok.status).toBe(200);
      expect(ok.headers["set-cookie"]?.[0]).toMatch(/^gateway_session=/);
    }
  });
});
