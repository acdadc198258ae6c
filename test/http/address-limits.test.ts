// What an address without an account can do to others, through a real login protection, gateway
// and ws on 127.0.0.1: a logout flood with made-up tokens signs nobody out and is answered 429
// past its budget, and an IPv6 client is counted by its /64 for logouts and failed logins.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionStore } from "chat-gateway";
import { memorySessionStore } from "chat-gateway/login";
import { Client } from "../gateway/harness.js";
import { HASHES, login, request, startStack, tempDir, writeUsers, type Stack } from "./helpers.js";

let cleanup: () => Promise<void>;
let file: string;
let stack: Stack | undefined;
const clients: Client[] = [];
beforeEach(async () => {
  let dir: string;
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
  await writeUsers(file, { alice: HASHES["alice-password"] });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await stack?.close();
  stack = undefined;
  await cleanup();
});

/** A memory session store whose lookups of one token wait while it is held: a hello stays being checked. */
function holdingStore(): SessionStore & { hold(token: string): void; release(): void } {
  const store = memorySessionStore();
  let held: { token: string; until: Promise<void> } | undefined;
  let release = () => {};
  return {
    ...store,
    async get(token, now) {
      if (token === held?.token) await held.until;
      return store.get(token, now);
    },
    hold: (token) => {
      held = {
        token,
        until: new Promise<void>((resolve) => {
          release = resolve;
        }),
      };
    },
    release: () => release(),
  };
}

function logout(from: string, headers: Record<string, string> = {}) {
  return request(stack!.srv.url, {
    method: "POST",
    path: "/api/auth/logout",
    headers: { "x-forwarded-for": from, "content-type": "application/json", ...headers },
  });
}

async function signIn(from = "10.0.0.9"): Promise<string> {
  const reply = await login(stack!.srv.url, "alice", "alice-password", { "x-forwarded-for": from });
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

describe("address limits", () => {
  it("logout flood - 1,200 logouts with made-up tokens revoke nothing: open sockets and a hello being checked stay; past 30 the address gets 429", async () => {
    const sessions = holdingStore();
    stack = await startStack({ usersFile: file, sessions, trustProxy: true });
    const token = await signIn();
    const open = await Client.connect(stack.ws, {}, { authorization: `Bearer ${token}` });
    const checking = new Client(stack.ws, { authorization: `Bearer ${token}` });
    clients.push(open, checking);
    await checking.opened;
    sessions.hold(token);
    const hello = checking.request("hello", { token: "", device_id: "d2" }, 30_000);

    const statuses: number[] = [];
    for (let batch = 0; batch < 24; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) => logout("203.0.113.7", { authorization: `Bearer made-up-${batch}-${i}` })),
      );
      statuses.push(...replies.map((r) => r.status));
    }
    sessions.release();

    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1170);
    const refused = await logout("203.0.113.7", { authorization: "Bearer another" });
    expect(refused.body).toEqual({
      error: "too many logouts from this address; try again later",
      retry_after: expect.any(Number),
    });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect((await hello).type).toBe("hello.ok");
    expect((await open.request("channel.list")).type).toBe("channel.list");
    expect(open.closeCode).toBeUndefined();

    // Another address still signs its own session out, and that closes its sockets.
    expect((await logout("198.51.100.1", { authorization: `Bearer ${token}` })).status).toBe(200);
    expect(await open.closedPromise).toBe(4401);
    expect(await checking.closedPromise).toBe(4401);
  }, 60_000);

  it("logout flood - an IPv6 client is budgeted by its /64, whatever address of it each logout comes from", async () => {
    stack = await startStack({ usersFile: file, trustProxy: true });
    const replies = await Promise.all(
      Array.from({ length: 31 }, (_, i) => logout(`2001:db8:1:2::${(i + 1).toString(16)}`)),
    );
    expect(replies.filter((r) => r.status === 429)).toHaveLength(1);
    expect((await logout("2001:db8:1:2:ffff:ffff:ffff:ffff")).status).toBe(429);
    expect((await logout("2001:db8:1:3::1")).status).toBe(200);
  });

  it("lockout - failed logins from many addresses of one IPv6 /64 lock that /64 out; another /64 may still sign in", async () => {
    stack = await startStack({ usersFile: file, trustProxy: true });
    for (let i = 1; i <= 10; i++) {
      expect(
        (await login(stack.srv.url, "alice", "wrong", { "x-forwarded-for": `2001:db8:1:2:${i.toString(16)}::1` }))
          .status,
      ).toBe(401);
    }
    const locked = await login(stack.srv.url, "alice", "alice-password", {
      "x-forwarded-for": "2001:db8:1:2:abcd::99",
    });
    expect(locked.status).toBe(429);
    expect(
      (await login(stack.srv.url, "alice", "alice-password", { "x-forwarded-for": "2001:db8:1:3::1" })).status,
    ).toBe(200);
  }, 60_000);
});
