// API keys of the doors (docs/PROTOCOL.md §19.1) where they are used and over HTTP: accepted by
// the doors (through the official `openai` client) and by hello, and by no other route; made by a
// signed-in user with a name unique per user (`POST /api/keys {name}`), listed and removed; at most
// 20 per user. The CLI's own tests are in api-keys-cli.test.ts.
import { describe, expect, it } from "vitest";
import { Client } from "../gateway/harness.js";
import { askWithKey, cliAdd, keyFixture } from "./api-key-server.js";
import { bearer, login, request, runUserCliProcess } from "./helpers.js";

const fx = keyFixture();

const ask = (apiKey: string, text?: string) => askWithKey(fx.srv.url, apiKey, text);

async function signIn(user = "alice"): Promise<string> {
  const reply = await login(fx.srv.url, user, `${user}-password`);
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

/** `POST /api/keys` with a session's token. */
function postKey(session: string, body: unknown) {
  return request(fx.srv.url, {
    method: "POST",
    path: "/api/keys",
    headers: { ...bearer(session), "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("API keys - where a key is a credential", () => {
  it("hello.token takes a key, as a device of its owner; a made-up key is refused", async () => {
    const srv = await fx.start();
    const key = await cliAdd(fx.file, "alice", "laptop");
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
    const srv = await fx.start();
    const key = await cliAdd(fx.file, "alice", "laptop");
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
  it("a signed-in user makes, lists and removes a key; the key is shown once", async () => {
    const srv = await fx.start();
    const session = await signIn();
    const made = await postKey(session, { name: "open webui" });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({ key_id: expect.any(String), key: expect.stringMatching(/^cgk_/) });
    expect(await ask(made.body.key)).not.toBe("");
    const listed = await request(srv.url, { path: "/api/keys", headers: bearer(session) });
    expect(listed.body.keys).toEqual([{ key_id: made.body.key_id, name: "open webui", created: expect.any(Number) }]);
    expect(listed.text).not.toContain(made.body.key);
    // Another user sees none of them, and cannot remove them.
    const bobs = await signIn("bob");
    expect((await request(srv.url, { path: "/api/keys", headers: bearer(bobs) })).body.keys).toEqual([]);
    const path_ = `/api/keys/${encodeURIComponent(made.body.key_id)}`;
    expect((await request(srv.url, { method: "DELETE", path: path_, headers: bearer(bobs) })).status).toBe(404);
    expect((await request(srv.url, { method: "DELETE", path: path_, headers: bearer(session) })).status).toBe(200);
    await expect(ask(made.body.key)).rejects.toMatchObject({ status: 401 });
  });

  it("a paired device's token needs the password to make a key", async () => {
    const srv = await fx.start();
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
      request(fx.srv.url, {
        method: "POST",
        path: "/api/keys",
        headers: { ...bearer(device), ...json },
        body: JSON.stringify(body),
      });
    expect((await post({ name: "phone" })).status).toBe(403);
    expect((await post({ name: "phone", password: "wrong" })).status).toBe(401);
    expect((await post({ name: "phone", password: "alice-password" })).status).toBe(200);
  });

  it("at most 20 keys a user: the 21st is refused over HTTP (429) and by the CLI (exit 1)", async () => {
    await fx.start();
    const session = await signIn();
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => postKey(session, { name: `key ${i}` })));
    expect(made.map((r) => r.status)).toEqual(Array(20).fill(200));
    const over = await postKey(session, { name: "one more" });
    expect(over.status).toBe(429);
    const cli = await runUserCliProcess(fx.file, ["key", "add", "one more", "--user", "alice"], undefined);
    expect(cli.code).toBe(1);
    expect(cli.err).toContain("20 API keys");
    expect(cli.out).toBe("");
  });

  it("a name is required, 1 to 64 printable characters, unique per user (409); another user may reuse it", async () => {
    const srv = await fx.start();
    const session = await signIn();
    for (const bad of [{}, { name: "" }, { name: "  " }, { name: 7 }, { name: "x".repeat(65) }, { name: "a\nb" }])
      expect((await postKey(session, bad)).status, JSON.stringify(bad)).toBe(400);
    expect((await postKey(session, { name: " laptop " })).status).toBe(200);
    const again = await postKey(session, { name: "laptop" });
    expect(again.status).toBe(409);
    expect(again.body.error).toContain("laptop");
    // The CLI sees the same store: the name is taken there too.
    const cli = await runUserCliProcess(fx.file, ["key", "add", "laptop", "--user", "alice"], undefined);
    expect(cli.code).toBe(1);
    expect((await postKey(await signIn("bob"), { name: "laptop" })).status).toBe(200);
    const listed = await request(srv.url, { path: "/api/keys", headers: bearer(session) });
    expect(listed.body.keys.map((k: { name: string }) => k.name)).toEqual(["laptop"]);
  });
});
