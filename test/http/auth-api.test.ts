import { manualClock } from "chat-gateway/testing";
import { writeFile } from "node:fs/promises";
import { beforeEach, describe, expect, it } from "vitest";
import { HASHES, bearer, login, request, usersFilePerTest, writeUsers, type TestServer } from "./helpers.js";

const users = usersFilePerTest();

const cookieOf = (set: string | string[] | undefined) => (Array.isArray(set) ? set[0]! : set!).split(";")[0]!;

describe("http - protection off (no users)", () => {
  it("ping, status, users and every gated path are open; login fails like an unknown user", async () => {
    const srv = await users.start({ usersFile: users.file });
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
    await writeFile(users.file, "{not json");
    const logs: string[] = [];
    const srv = await users.start({ usersFile: users.file, log: (m) => logs.push(m) });
    expect((await request(srv.url, { path: "/api/x" })).status).toBe(200);
    expect(logs.join("\n")).toMatch(/treated as no users/);
  });
});

describe("http - protection on", () => {
  const clock = manualClock(Date.UTC(2026, 0, 1));
  let srv: TestServer;
  beforeEach(async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"], long: HASHES.x72 });
    srv = await users.start({ usersFile: users.file, clock: clock.now });
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
