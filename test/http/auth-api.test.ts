import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import https from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLoginProtection, memorySessionStore, UserStore } from "chat-gateway/http";
import {
  HASHES,
  bearer,
  login,
  manualClock,
  request,
  startServer,
  tempDir,
  writeUsers,
  type TestServer,
} from "./helpers.js";

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
let srv: TestServer | undefined;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
});
afterEach(async () => {
  await srv?.close();
  srv = undefined;
  await cleanup();
});

const cookieOf = (set: string | string[] | undefined) => (Array.isArray(set) ? set[0]! : set!).split(";")[0]!;

describe("http - protection off (no users)", () => {
  it("ping, status, users and every gated path are open; login fails like an unknown user", async () => {
    srv = await startServer({ usersFile: file });
    expect(await request(srv.url, { path: "/api/ping" })).toMatchObject({ status: 200, body: { ok: true } });
    expect((await request(srv.url, { path: "/api/auth/status" })).body).toEqual({
      enabled: false,
      user: null,
      expires_at: null,
    });
    expect((await request(srv.url, { path: "/api/auth/users" })).body).toEqual({ users: [] });
    const app = await request(srv.url, { path: "/api/chats" });
    expect(app).toMatchObject({ status: 200, body: { app: "/api/chats", user: null } });
    expect((await request(srv.url, { path: "/ws/gateway" })).status).toBe(200);
    expect(await login(srv.url, "alice", "alice-password")).toMatchObject({
      status: 401,
      body: { error: "invalid username or password" },
    });
  });

  it("a malformed store is no users, and the server says so", async () => {
    await writeFile(file, "{not json");
    const logs: string[] = [];
    srv = await startServer({ usersFile: file, log: (m) => logs.push(m) });
    expect((await request(srv.url, { path: "/api/x" })).status).toBe(200);
    expect(logs.join("\n")).toMatch(/treated as no users/);
  });
});

describe("http - protection on", () => {
  const clock = manualClock();
  beforeEach(async () => {
    await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"], long: HASHES.x72 });
    srv = await startServer({ usersFile: file, clock: clock.now });
  });

  it("login answers the token, username and expiry, and sets the session cookie", async () => {
    const reply = await login(srv!.url, "alice", "alice-password");
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body).sort()).toEqual(["expires_at", "token", "username"]);
    expect(reply.body.username).toBe("alice");
    expect(reply.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 bits, base64url
    expect(reply.body.expires_at).toBe(Math.floor(clock.now() / 1000) + 86_400);
    expect(reply.headers["set-cookie"]).toEqual([
      `gateway_session=${reply.body.token}; HttpOnly; SameSite=Lax; Path=/; Max-Age=86400`,
    ]);
    expect(reply.headers["cache-control"]).toBe("no-store");
  });

  it("status tells who is signed in", async () => {
    expect((await request(srv!.url, { path: "/api/auth/status" })).body).toEqual({
      enabled: true,
      user: null,
      expires_at: null,
    });
    const { body } = await login(srv!.url, "alice", "alice-password");
    expect((await request(srv!.url, { path: "/api/auth/status", headers: bearer(body.token) })).body).toEqual({
      enabled: true,
      user: "alice",
      expires_at: body.expires_at,
    });
  });

  it("every bad credential gets the same 401 body", async () => {
    const unknown = await login(srv!.url, "mallory", "alice-password");
    const wrong = await login(srv!.url, "alice", "bob-password");
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.text).toBe(wrong.text);
    expect(unknown.headers["set-cookie"]).toBeUndefined();
  });

  it("a login password over 72 bytes is cut to 72 bytes", async () => {
    expect((await login(srv!.url, "long", `${"x".repeat(72)}and-more`)).status).toBe(200);
    expect((await login(srv!.url, "long", `${"x".repeat(71)}é-and-more`)).status).toBe(401);
  });

  it("the gate: 401 on every other /api/ and /ws/ path, any method, and on disguised paths", async () => {
    for (const [method, p] of [
      ["GET", "/api/chats"],
      ["DELETE", "/api/chats/1"],
      ["GET", "/ws/gateway"],
      ["GET", "/api"],
      ["GET", "/api/auth/other"],
      ["GET", "//api/chats"],
      ["GET", "/%61pi/chats"],
      ["GET", "/static/../api/chats"],
      ["GET", "/static/%2e%2e/ws/gateway"],
      ["GET", "/API/chats"],
      ["GET", "http://127.0.0.1/api/chats"],
    ] as const) {
      const reply = await request(srv!.url, { method, path: p });
      expect(reply.status, `${method} ${p}`).toBe(401);
      expect(reply.body).toEqual({ error: "login required" });
    }
    expect(srv!.seen).toEqual([]);
    expect((await request(srv!.url, { path: "/index.html" })).body).toEqual({ app: "/index.html", user: null });
    expect((await request(srv!.url, { path: "/apix" })).status).toBe(200);
  });

  it("a session opens the gate, and userOf tells the routes who it is", async () => {
    const { body, headers } = await login(srv!.url, "alice", "alice-password");
    expect((await request(srv!.url, { path: "/api/chats", headers: bearer(body.token) })).body).toEqual({
      app: "/api/chats",
      user: "alice",
    });
    expect(
      (
        await request(srv!.url, {
          path: "/api/chats",
          headers: { cookie: `theme=dark; ${cookieOf(headers["set-cookie"])}` },
        })
      ).body.user,
    ).toBe("alice");
  });

  it("bearer beats cookie; an empty bearer falls back to the cookie", async () => {
    const alice = (await login(srv!.url, "alice", "alice-password")).body.token;
    const bob = (await login(srv!.url, "bob", "bob-password")).body.token;
    const user = async (headers: Record<string, string>) => {
      const reply = await request(srv!.url, { path: "/api/me", headers });
      return reply.status === 200 ? reply.body.user : reply.status;
    };
    expect(await user({ authorization: `Bearer ${alice}`, cookie: `gateway_session=${bob}` })).toBe("alice");
    expect(await user({ authorization: "Bearer not-a-session", cookie: `gateway_session=${bob}` })).toBe(401);
    expect(await user({ authorization: "Bearer", cookie: `gateway_session=${bob}` })).toBe("bob");
    expect(await user({ authorization: "Bearer    ", cookie: `gateway_session=${bob}` })).toBe("bob");
    expect(await user({ authorization: `bEaReR   ${alice}  ` })).toBe("alice");
    expect(
      await user({
        authorization: `Basic ${Buffer.from("alice:alice-password").toString("base64")}`,
        cookie: `gateway_session=${bob}`,
      }),
    ).toBe("bob");
    expect(await user({ cookie: "other_session=x" })).toBe(401);
  });

  it("users lists sorted names to a signed-in caller only", async () => {
    expect((await request(srv!.url, { path: "/api/auth/users" })).status).toBe(401);
    const { body } = await login(srv!.url, "bob", "bob-password");
    expect((await request(srv!.url, { path: "/api/auth/users", headers: bearer(body.token) })).body).toEqual({
      users: ["alice", "bob", "long"],
    });
  });

  it("logout ends the presented session and clears the cookie", async () => {
    const { body } = await login(srv!.url, "alice", "alice-password");
    const out = await request(srv!.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: { cookie: `gateway_session=${body.token}`, "content-type": "application/json" },
    });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ ok: true });
    expect(out.headers["set-cookie"]).toEqual(["gateway_session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0"]);
    expect((await request(srv!.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(401);
    expect(
      (
        await request(srv!.url, {
          method: "POST",
          path: "/api/auth/logout",
          headers: { "content-type": "application/json" },
        })
      ).body,
    ).toEqual({ ok: true });
  });

  it("logout by bearer token needs neither a JSON body nor an Origin check; by cookie it still does", async () => {
    const { body } = await login(srv!.url, "alice", "alice-password");
    const byCookie = await request(srv!.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: { cookie: `gateway_session=${body.token}` },
    });
    expect(byCookie.status).toBe(415);
    const foreign = await request(srv!.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: {
        cookie: `gateway_session=${body.token}`,
        "content-type": "application/json",
        origin: "https://evil.example",
      },
    });
    expect(foreign.status).toBe(403);
    expect((await request(srv!.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(200);
    const out = await request(srv!.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: { ...bearer(body.token), origin: "https://app.example" },
    });
    expect(out).toMatchObject({ status: 200, body: { ok: true } });
    expect((await request(srv!.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(401);
  });

  it("sessions last 24 hours", async () => {
    const { body } = await login(srv!.url, "alice", "alice-password");
    clock.advance(86_399_000);
    expect((await request(srv!.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(200);
    clock.advance(1_000);
    expect((await request(srv!.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(401);
  });

  it("405 for a wrong method on a reachable endpoint, with Allow", async () => {
    for (const [method, p, allow] of [
      ["POST", "/api/ping", "GET, HEAD"],
      ["GET", "/api/auth/login", "POST"],
      ["GET", "/api/auth/logout", "POST"],
      ["PUT", "/api/auth/status", "GET, HEAD"],
      ["DELETE", "/api/auth/users", "GET, HEAD"],
    ] as const) {
      const reply = await request(srv!.url, { method, path: p });
      expect(reply.status, `${method} ${p}`).toBe(405);
      expect(reply.headers.allow).toBe(allow);
      expect(typeof reply.body.error).toBe("string");
    }
  });

  it("bad login bodies: 400 for wrong JSON or fields, 413 over the size limit", async () => {
    const post = (body: string) =>
      request(srv!.url, {
        method: "POST",
        path: "/api/auth/login",
        headers: { "content-type": "application/json" },
        body,
      });
    expect((await post("{oops")).status).toBe(400);
    expect((await post('{"username": "alice"}')).status).toBe(400);
    expect((await post('{"username": "alice", "password": 5}')).status).toBe(400);
    expect((await post("[]")).status).toBe(400);
    const big = await post(JSON.stringify({ username: "alice", password: "x".repeat(20_000) }));
    expect(big.status).toBe(413);
    expect(big.body.error).toMatch(/16384 bytes/);
  });
});

describe("http - the user store changes under a running server", () => {
  it("user add turns protection on, removing the last user turns it off, with no restart", async () => {
    srv = await startServer({ usersFile: file });
    const cli = new UserStore(file); // the CLI's own code path; test/http/user-cli.test.ts runs the real CLI
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(200);
    await cli.add("alice", HASHES["alice-password"]);
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(401);
    const { body } = await login(srv.url, "alice", "alice-password");
    expect((await request(srv.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(200);
    await cli.remove("alice");
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(200);
    expect((await request(srv.url, { path: "/api/auth/status" })).body.enabled).toBe(false);
  });

  it("removing a user or changing its password ends its sessions", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
    srv = await startServer({ usersFile: file });
    const cli = new UserStore(file);
    const alice = (await login(srv.url, "alice", "alice-password")).body.token;
    const bob = (await login(srv.url, "bob", "bob-password")).body.token;
    await cli.setHash("bob", HASHES["alice-password"]);
    expect((await request(srv.url, { path: "/api/x", headers: bearer(bob) })).status).toBe(401);
    expect((await request(srv.url, { path: "/api/x", headers: bearer(alice) })).status).toBe(200);
    await cli.remove("alice");
    expect((await request(srv.url, { path: "/api/x", headers: bearer(alice) })).status).toBe(401);
  });
});

describe("http - lockout over HTTP", () => {
  it("10 failures lock the IP (the 10th still 401), 429 with Retry-After, no extension, no session ended, lifts after 900 s", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    const clock = manualClock();
    srv = await startServer({ usersFile: file, clock: clock.now });
    const token = (await login(srv.url, "alice", "alice-password")).body.token;
    // Twelve at once: judged as if one after another, so the 11th and 12th meet the lockout.
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => login(srv!.url, "alice", "wrong").then((r) => r.status)),
    );
    expect(statuses.sort()).toEqual([...Array(10).fill(401), 429, 429]);
    const locked = await login(srv.url, "alice", "alice-password");
    expect(locked.status).toBe(429);
    expect(locked.body).toEqual({ error: expect.any(String), retry_after: 900 });
    expect(locked.headers["retry-after"]).toBe("900");
    expect((await request(srv.url, { path: "/api/x", headers: bearer(token) })).status).toBe(200);
    // No trusted proxy: a forged X-Forwarded-For does not escape the lockout of the socket's address.
    expect((await login(srv.url, "alice", "alice-password", { "x-forwarded-for": "203.0.113.7" })).status).toBe(429);
    clock.advance(600_000);
    expect((await login(srv.url, "alice", "wrong")).body.retry_after).toBe(300);
    clock.advance(299_000);
    expect((await login(srv.url, "alice", "alice-password")).headers["retry-after"]).toBe("1");
    clock.advance(1_000);
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
  });

  it("a success clears the failures", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file });
    await Promise.all(Array.from({ length: 9 }, () => login(srv!.url, "alice", "wrong")));
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
    // Without the clearing this would be the 10th failure and lock the address.
    expect((await login(srv.url, "alice", "wrong")).status).toBe(401);
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
  });

  it("behind a trusted proxy the lockout is per forwarded client", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file, trustProxy: true });
    await Promise.all(
      Array.from({ length: 10 }, () =>
        login(srv!.url, "alice", "wrong", { "x-forwarded-for": "198.51.100.1, 203.0.113.7" }),
      ),
    );
    expect((await login(srv.url, "alice", "alice-password", { "x-forwarded-for": "203.0.113.7" })).status).toBe(429);
    // The left entry is the client's own claim; only the proxy's (rightmost) entry decides.
    expect(
      (await login(srv.url, "alice", "alice-password", { "x-forwarded-for": "203.0.113.7, 203.0.113.8" })).status,
    ).toBe(200);
  });
});

describe("http - a login storm", () => {
  it("more than ten logins at once from one address all get their answer", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file, workers: 2 });
    const replies = await Promise.all(Array.from({ length: 12 }, () => login(srv!.url, "alice", "alice-password")));
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(200));
  });

  it("logins beyond the bounded queue are refused with 429 at once", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file, workers: 1, maxLoginQueue: 2, trustProxy: true });
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        login(srv!.url, "alice", "alice-password", { "x-forwarded-for": `192.0.2.${i}` }),
      ),
    );
    const busy = replies.filter((r) => r.status === 429);
    expect(replies.filter((r) => r.status === 200)).toHaveLength(3);
    expect(busy).toHaveLength(5);
    expect(busy[0]!.headers["retry-after"]).toBe("1");
    expect(busy[0]!.body).toEqual({ error: "too many logins at once; try again shortly", retry_after: 1 });
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
  });
});

describe("http - TLS", () => {
  let key: string;
  let cert: string;
  beforeAll(async () => {
    const tls = await tempDir();
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        `${tls.dir}/k.pem`,
        "-out",
        `${tls.dir}/c.pem`,
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
      ],
      { stdio: "ignore" },
    );
    key = readFileSync(`${tls.dir}/k.pem`, "utf8");
    cert = readFileSync(`${tls.dir}/c.pem`, "utf8");
    await tls.cleanup();
  });
  let server: https.Server | undefined;
  afterAll(() => server?.close());

  it("over TLS the session cookie is __Host- prefixed and Secure; only that name signs in there", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    const protection = createLoginProtection({ usersFile: file, sessions: memorySessionStore(), service: "myapp" });
    server = https.createServer({ key, cert }, async (req, res) => {
      if (!(await protection.handle(req, res))) res.end("app");
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
      new Promise<{ status: number; setCookie: string[] | undefined }>((resolve, reject) => {
        const req = https.request(
          { host: "127.0.0.1", port, method, path, rejectUnauthorized: false, headers },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode!, setCookie: res.headers["set-cookie"] });
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    const { setCookie } = await send(
      "POST",
      "/api/auth/login",
      { "content-type": "application/json" },
      JSON.stringify({ username: "alice", password: "alice-password" }),
    );
    expect(setCookie?.[0]).toMatch(
      /^__Host-myapp_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Lax; Path=\/; Max-Age=86400; Secure$/,
    );
    const token = setCookie![0]!.split(";")[0]!.split("=")[1]!;
    expect((await send("GET", "/api/chats", { cookie: `__Host-myapp_session=${token}` })).status).toBe(200);
    // A cookie without the prefix could have been planted by a sibling subdomain or a plain-HTTP page.
    expect((await send("GET", "/api/chats", { cookie: `myapp_session=${token}` })).status).toBe(401);
    const out = await send(
      "POST",
      "/api/auth/logout",
      { cookie: `__Host-myapp_session=${token}`, "content-type": "application/json" },
      "{}",
    );
    expect(out.setCookie).toEqual(["__Host-myapp_session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0; Secure"]);
    expect((await send("GET", "/api/chats", { cookie: `__Host-myapp_session=${token}` })).status).toBe(401);
    server.closeAllConnections();
    await protection.close();
  });

  it("and behind a trusted TLS proxy (X-Forwarded-Proto), not an untrusted one", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    srv = await startServer({ usersFile: file, trustProxy: true });
    expect(
      (await login(srv.url, "alice", "alice-password", { "x-forwarded-proto": "https" })).headers["set-cookie"]![0],
    ).toMatch(/^__Host-gateway_session=.*; Secure$/);
    await srv.close();
    srv = await startServer({ usersFile: file });
    expect(
      (await login(srv.url, "alice", "alice-password", { "x-forwarded-proto": "https" })).headers["set-cookie"]![0],
    ).toMatch(/^gateway_session=(?!.*Secure)/);
  });
});

describe("memory session store", () => {
  it("an expired token is deleted on lookup; expired sessions are purged when one is created", async () => {
    const store = memorySessionStore();
    await store.create({ token: "a", username: "alice", expires_at: 100 }, 0);
    await store.create({ token: "b", username: "bob", expires_at: 200 }, 0);
    expect(await store.get("a", 99)).toEqual({ token: "a", username: "alice", expires_at: 100 });
    expect(await store.get("a", 100)).toBeUndefined();
    expect(await store.get("a", 0)).toBeUndefined(); // gone, not merely hidden
    await store.create({ token: "c", username: "carol", expires_at: 500 }, 200);
    expect(await store.get("b", 0)).toBeUndefined();
    expect(await store.get("c", 0)).toMatchObject({ username: "carol" });
    await store.deleteUser("carol");
    expect(await store.get("c", 0)).toBeUndefined();
  });
});
