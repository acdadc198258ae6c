// A pairing link must not sign a browser into another account (docs/PROTOCOL.md §16): the look-up
// names the account without using the code up, the redeem needs the person's confirmation, comes
// only from the server's own site, and replaces the signed-in session of another user only when
// told to. Real HTTP on 127.0.0.1 and a real ws connection.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Client } from "../gateway/harness.js";
import { bearer, HASHES, login, request, startStack, tempDir, writeUsers, type Reply, type Stack } from "./helpers.js";

let cleanup: () => Promise<void>;
let stack: Stack;
const clients: Client[] = [];
beforeEach(async () => {
  let dir: string;
  ({ dir, cleanup } = await tempDir());
  const usersFile = path.join(dir, "users.json");
  await writeUsers(usersFile, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
  stack = await startStack({ usersFile });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await stack.close();
  await cleanup();
});

const JSON_TYPE = { "content-type": "application/json" };

async function sessionOf(username: string): Promise<string> {
  const reply = await login(stack.srv.url, username, `${username}-password`);
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

/** A fresh pairing code of the holder of `token`, for a device named `name`. */
async function codeOf(token: string, name = "kitchen tablet"): Promise<string> {
  const reply = await request(stack.srv.url, {
    method: "POST",
    path: "/api/devices/pair",
    headers: { ...JSON_TYPE, ...bearer(token) },
    body: JSON.stringify({ name }),
  });
  expect(reply.status).toBe(200);
  return reply.body.code as string;
}

function post(pathname: string, body: unknown, headers: Record<string, string> = JSON_TYPE): Promise<Reply> {
  return request(stack.srv.url, {
    method: "POST",
    path: pathname,
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const cookieOf = (token: string) => ({ cookie: `gateway_session=${token}` });

async function userOf(headers: Record<string, string>): Promise<string | null> {
  return (await request(stack.srv.url, { path: "/api/auth/status", headers })).body.user;
}

describe("pairing link - the person is asked first", () => {
  it("the look-up names the account and the device without using the code up; a wrong code is a failed login", async () => {
    const code = await codeOf(await sessionOf("alice"));
    const bobs = await codeOf(await sessionOf("bob"));
    const looked = await post("/api/devices/lookup", { code: code.toLowerCase() });
    expect(looked.status).toBe(200);
    expect(looked.body).toEqual({ username: "alice", name: "kitchen tablet", expires_at: expect.any(Number) });
    expect(looked.headers["set-cookie"]).toBeUndefined();
    expect((await post("/api/devices/lookup", { code })).body.username).toBe("alice");
    // Looked up twice, still good for its one redeem.
    const redeemed = await post("/api/devices/redeem", { code, confirm: true });
    expect(redeemed.status).toBe(200);
    expect(redeemed.body.username).toBe("alice");
    expect((await post("/api/devices/lookup", { code })).status).toBe(401);
    // Wrong codes count against the address like wrong passwords: ten lock it out of the look-up too.
    for (let i = 0; i < 9; i++)
      expect((await post("/api/devices/lookup", { code: `WRONGCODE${i + 2}` })).status).toBe(401);
    const locked = await post("/api/devices/lookup", { code: bobs });
    expect(locked.status).toBe(429);
  });

  it("a redeem without confirm: true is refused 400 and uses nothing up", async () => {
    const code = await codeOf(await sessionOf("alice"));
    for (const body of [{ code }, { code, confirm: "yes" }, { code, confirm: true, replace_session: "yes" }]) {
      const refused = await post("/api/devices/redeem", body);
      expect(refused.status).toBe(400);
      expect(refused.headers["set-cookie"]).toBeUndefined();
    }
    expect((await post("/api/devices/lookup", { code })).status).toBe(200);
    expect((await post("/api/devices/redeem", { code, confirm: true })).status).toBe(200);
  });

  it("a cross-site, foreign-Origin or non-JSON redeem or look-up is refused, sets no cookie and uses nothing up", async () => {
    const code = await codeOf(await sessionOf("alice"));
    const body = JSON.stringify({ code, confirm: true });
    const attempts: Array<[Record<string, string>, number]> = [
      [{ ...JSON_TYPE, "sec-fetch-site": "cross-site" }, 403],
      // An Origin the server does not know, even with a browser saying same-site.
      [{ ...JSON_TYPE, origin: "http://evil.example", "sec-fetch-site": "same-site" }, 403],
      [{ ...JSON_TYPE, origin: "null" }, 403],
      // What a page of another site can post without asking first.
      [{ "content-type": "text/plain" }, 415],
      [{ "content-type": "application/x-www-form-urlencoded" }, 415],
      [{ "content-type": "multipart/form-data; boundary=x" }, 415],
      [{}, 415],
    ];
    for (const [headers, status] of attempts) {
      for (const route of ["/api/devices/redeem", "/api/devices/lookup"]) {
        const refused = await post(route, body, headers);
        expect({ route, headers, status: refused.status }).toEqual({ route, headers, status });
        expect(refused.headers["set-cookie"]).toBeUndefined();
      }
    }
    // The server's own page passes.
    const own = { ...JSON_TYPE, origin: stack.srv.url, "sec-fetch-site": "same-origin" };
    expect((await post("/api/devices/lookup", body, own)).body.username).toBe("alice");
    expect((await post("/api/devices/redeem", body, own)).status).toBe(200);
  });

  it("a browser signed in as bob keeps bob when it redeems alice's code without replace_session; the code stays good", async () => {
    const bob = await sessionOf("bob");
    const code = await codeOf(await sessionOf("alice"));
    const refused = await post("/api/devices/redeem", { code, confirm: true }, { ...JSON_TYPE, ...cookieOf(bob) });
    expect(refused.status).toBe(409);
    expect(refused.body.signed_in_as).toBe("bob");
    expect(refused.headers["set-cookie"]).toBeUndefined();
    const refusedFalse = await post(
      "/api/devices/redeem",
      { code, confirm: true, replace_session: false },
      { ...JSON_TYPE, ...cookieOf(bob) },
    );
    expect(refusedFalse.status).toBe(409);
    expect(await userOf(cookieOf(bob))).toBe("bob");
    expect((await post("/api/devices/lookup", { code })).body.username).toBe("alice");
    // A session of the code's own user is no other account: nothing to replace.
    const alice = await sessionOf("alice");
    const same = await post("/api/devices/redeem", { code, confirm: true }, { ...JSON_TYPE, ...cookieOf(alice) });
    expect(same.status).toBe(200);
    expect(await userOf(cookieOf(alice))).toBe("alice");
  });

  it("with replace_session: true the redeem signs bob out (his socket closes 4401) and the cookie becomes alice's device", async () => {
    const bob = await sessionOf("bob");
    const bobSocket = await Client.connect(stack.ws, {}, cookieOf(bob));
    clients.push(bobSocket);
    const code = await codeOf(await sessionOf("alice"));
    const replaced = await post(
      "/api/devices/redeem",
      { code, confirm: true, replace_session: true },
      { ...JSON_TYPE, ...cookieOf(bob) },
    );
    expect(replaced.status).toBe(200);
    expect(replaced.body.username).toBe("alice");
    expect(replaced.headers["set-cookie"]?.[0]).toMatch(new RegExp(`^gateway_session=${replaced.body.token};`));
    expect(await bobSocket.closedPromise).toBe(4401);
    expect(await userOf(cookieOf(bob))).toBeNull();
    expect(await userOf(cookieOf(replaced.body.token))).toBe("alice");
  });

  it("a browser paired as bob that joins alice revokes bob's device: its token no longer signs in", async () => {
    const bobs = await codeOf(await sessionOf("bob"));
    const bobDevice = (await post("/api/devices/redeem", { code: bobs, confirm: true })).body.token as string;
    expect(await userOf(cookieOf(bobDevice))).toBe("bob");
    const code = await codeOf(await sessionOf("alice"));
    const headers = { ...JSON_TYPE, ...cookieOf(bobDevice) };
    expect((await post("/api/devices/redeem", { code, confirm: true }, headers)).status).toBe(409);
    expect((await post("/api/devices/redeem", { code, confirm: true, replace_session: true }, headers)).status).toBe(
      200,
    );
    expect(await userOf(cookieOf(bobDevice))).toBeNull();
    const bobList = await request(stack.srv.url, { path: "/api/devices", headers: bearer(await sessionOf("bob")) });
    expect(bobList.body.devices).toEqual([]);
  });
});
