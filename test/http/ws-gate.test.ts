import http from "node:http";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import bcrypt from "bcryptjs";
import { ANONYMOUS_OWNER, type ConnectionContext, type UpgradeDecision } from "chat-gateway";
import { GatewayError } from "chat-gateway/protocol";
import { sessionId, UserStore } from "chat-gateway/login";
import { COST12_HASHES, HASHES, login, startServer, tempDir, writeUsers, type TestServer } from "./helpers.js";

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
let srv: TestServer | undefined;
let wss: WebSocketServer;
/** What each accepted connection was told by the gate. */
let accepted: Array<UpgradeDecision & { ok: true }>;

/** Mounts a plain ws server behind `authorizeUpgrade`, as the TSDoc of createLoginProtection shows. */
function mount(server: http.Server, protection: TestServer["protection"]): void {
  server.on("upgrade", async (req, socket, head) => {
    const decision = await protection.authorizeUpgrade(req);
    if (!decision.ok) {
      const body = JSON.stringify({ error: decision.message });
      socket.end(
        `HTTP/1.1 ${decision.status} ${http.STATUS_CODES[decision.status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      accepted.push(decision);
      wss.emit("connection", ws, req);
    });
  });
}

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
  wss = new WebSocketServer({ noServer: true });
  accepted = [];
});
afterEach(async () => {
  for (const client of wss.clients) client.terminate();
  wss.close();
  await srv?.close();
  srv = undefined;
  await cleanup();
});

/** Opens a socket; resolves the HTTP status of a refusal, or 101 once open. */
function connect(
  p: string,
  options: { headers?: Record<string, string>; origin?: string } = {},
): Promise<{ status: number; body?: string; ws?: WebSocket }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${srv!.port}${p}`, {
      headers: options.headers,
      ...(options.origin ? { origin: options.origin } : {}),
    });
    ws.on("open", () => resolve({ status: 101, ws }));
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    ws.on("error", (e) => (e.message.includes("Unexpected server response") ? undefined : reject(e)));
  });
}

async function open(p: string, options: Parameters<typeof connect>[1] = {}): Promise<number> {
  const result = await connect(p, options);
  result.ws?.close();
  return result.status;
}

describe("ws gate - protection off", () => {
  it("every upgrade passes, with no session", async () => {
    srv = await startServer({ usersFile: file }, mount);
    expect(await open("/ws/gateway")).toBe(101);
    expect(accepted).toEqual([{ ok: true }]);
  });
});

describe("ws gate - protection on", () => {
  let alice: string;
  let bob: string;
  beforeEach(async () => {
    await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
    srv = await startServer({ usersFile: file, allowedOrigins: ["https://app.example.com"] }, mount);
    [alice, bob] = await Promise.all([
      login(srv.url, "alice", "alice-password"),
      login(srv.url, "bob", "bob-password"),
    ]).then((r) => r.map((x) => x.body.token as string));
  });

  it("no session: 401 before the upgrade, with a JSON body", async () => {
    expect(await connect("/ws/gateway")).toEqual({ status: 401, body: '{"error":"login required"}' });
    expect(await open("/ws/gateway", { headers: { authorization: "Bearer nope" } })).toBe(401);
    expect(await open("/ws/gateway", { headers: { cookie: "gateway_session=nope" } })).toBe(401);
    expect(await open("/%77s/gateway")).toBe(401);
    expect(await open("/api/ping")).toBe(401); // a public endpoint, but not a WebSocket one
    expect(accepted).toEqual([]);
  });

  it("a bearer session passes and is handed on as context.session", async () => {
    expect(await open("/ws/gateway", { headers: { authorization: `Bearer ${alice}` } })).toBe(101);
    expect(accepted).toEqual([{ ok: true, context: { session: { username: "alice", token: alice } } }]);
  });

  it("bearer beats cookie; an empty bearer falls back to the cookie", async () => {
    expect(
      await open("/ws/gateway", { headers: { authorization: `Bearer ${alice}`, cookie: `gateway_session=${bob}` } }),
    ).toBe(101);
    expect(
      await open("/ws/gateway", { headers: { authorization: "Bearer bad", cookie: `gateway_session=${bob}` } }),
    ).toBe(401);
    expect(await open("/ws/gateway", { headers: { authorization: "Bearer ", cookie: `gateway_session=${bob}` } })).toBe(
      101,
    );
    expect(accepted.map((d) => d.context?.session?.username)).toEqual(["alice", "bob"]);
  });

  it("Origin rule: a cookie upgrade from a foreign origin is 403; own origin, allowed origins and no Origin pass", async () => {
    const cookie = { cookie: `gateway_session=${alice}` };
    expect(await connect("/ws/gateway", { headers: cookie, origin: "https://evil.example" })).toEqual({
      status: 403,
      body: '{"error":"origin not allowed"}',
    });
    expect(await open("/ws/gateway", { headers: cookie, origin: "null" })).toBe(403);
    expect(await open("/ws/gateway", { headers: cookie, origin: `http://localhost:${srv!.port}` })).toBe(403);
    expect(await open("/ws/gateway", { headers: cookie, origin: `https://127.0.0.1:${srv!.port}` })).toBe(403);
    expect(await open("/ws/gateway", { headers: cookie, origin: `http://127.0.0.1:${srv!.port}` })).toBe(101);
    expect(await open("/ws/gateway", { headers: cookie, origin: "https://APP.example.com" })).toBe(101);
    expect(await open("/ws/gateway", { headers: cookie })).toBe(101);
  });

  it("a bearer upgrade is not subject to the Origin rule", async () => {
    expect(
      await open("/ws/gateway", { headers: { authorization: `Bearer ${alice}` }, origin: "https://evil.example" }),
    ).toBe(101);
  });

  it("an upgrade outside /api/ and /ws/ is not gated and carries no session", async () => {
    expect(await open("/socket", { headers: { authorization: `Bearer ${alice}` } })).toBe(101);
    expect(accepted).toEqual([{ ok: true }]);
  });
});

describe("authenticator - the hello rules of PROTOCOL §2", () => {
  const hello = (token: string, context: ConnectionContext = {}) => ({ token, deviceId: "phone", context });
  const session = (username: string, token: string): ConnectionContext => ({ session: { username, token } });

  it("protection off: any token, the anonymous owner, user null", async () => {
    srv = await startServer({ usersFile: file });
    const auth = srv.protection.authenticator();
    expect(await auth.authenticate(hello(""))).toEqual({ owner: ANONYMOUS_OWNER, user: null });
    expect(await auth.authenticate(hello("whatever"))).toEqual({ owner: ANONYMOUS_OWNER, user: null });
  });

  it("protection on: the upgrade's session, or a token of the same user; everything else is auth", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
    srv = await startServer({ usersFile: file });
    const [alice, alice2, bob] = await Promise.all([
      login(srv.url, "alice", "alice-password"),
      login(srv.url, "alice", "alice-password"),
      login(srv.url, "bob", "bob-password"),
    ]).then((r) => r.map((x) => x.body.token as string));
    const auth = srv.protection.authenticator();
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => "accepted",
        (e: unknown) => (e instanceof GatewayError ? e.code : e),
      );
    // The sessions used are named (for revocation) and the result expires with the first of them.
    const expiresAt = expect.any(Number);
    expect(await auth.authenticate(hello("", session("alice", alice)))).toEqual({
      owner: "alice",
      user: "alice",
      sessions: [sessionId(alice)],
      expiresAt,
    });
    expect(await auth.authenticate(hello(alice2, session("alice", alice)))).toEqual({
      owner: "alice",
      user: "alice",
      sessions: [sessionId(alice), sessionId(alice2)],
      expiresAt,
    });
    expect(await auth.authenticate(hello(bob))).toEqual({
      owner: "bob",
      user: "bob",
      sessions: [sessionId(bob)],
      expiresAt,
    });
    expect(await refused(auth.authenticate(hello(bob, session("alice", alice))))).toBe("auth");
    expect(await refused(auth.authenticate(hello("forged", session("alice", alice))))).toBe("auth");
    expect(await refused(auth.authenticate(hello("")))).toBe("auth");
    expect(await refused(auth.authenticate(hello("", session("bob", alice))))).toBe("auth");
    // Logged out between the upgrade and hello.
    await fetch(`${srv.url}/api/auth/logout`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" },
    });
    expect(await refused(auth.authenticate(hello("", session("alice", alice))))).toBe("auth");
    // A user removed by the CLI.
    await new UserStore(file).remove("bob");
    expect(await refused(auth.authenticate(hello(bob)))).toBe("auth");
  });
});

describe("a login during a running stream", () => {
  it("bcrypt runs off the event loop: frames keep flowing and the loop stays responsive", async () => {
    await writeUsers(file, { alice: COST12_HASHES["alice-password"] });
    srv = await startServer({ usersFile: file, trustProxy: true }, mount);
    const token = (await login(srv.url, "alice", "alice-password")).body.token as string;
    let timer: NodeJS.Timeout | undefined;
    wss.on("connection", (ws) => {
      let n = 0;
      timer = setInterval(
        () => ws.send(JSON.stringify({ type: "message.delta", payload: { text: `piece ${n++}` } })),
        5,
      );
    });
    const { ws } = await connect("/ws/gateway", { headers: { authorization: `Bearer ${token}` } });
    const arrivals: number[] = [];
    ws!.on("message", () => arrivals.push(performance.now()));
    await new Promise((r) => setTimeout(r, 100));
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const from = arrivals.length;
    const replies = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        login(srv!.url, "alice", i % 2 ? "alice-password" : "wrong", { "x-forwarded-for": `192.0.2.${i}` }),
      ),
    );
    delay.disable();
    clearInterval(timer);
    ws!.close();
    expect(replies.map((r) => r.status)).toEqual([401, 200, 401, 200]);
    const during = arrivals.slice(from);
    const gaps = during.slice(1).map((t, i) => t - during[i]!);
    // One compare on this thread, timed now, is what each login would stall the loop for if bcrypt
    // ran on it (~350 ms at cost 12 on an idle machine; as much slower as the machine is busy).
    const started = performance.now();
    bcrypt.compareSync("alice-password", COST12_HASHES["alice-password"]);
    const oneCompareMs = performance.now() - started;
    expect(during.length).toBeGreaterThan(50);
    expect(Math.max(...gaps)).toBeLessThan(oneCompareMs / 2);
    expect(delay.max / 1e6).toBeLessThan(oneCompareMs / 2);
  });
});
