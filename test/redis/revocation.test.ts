// Revocation across processes: two gateways, each with its own Redis connection, share sessions
// in Redis; a logout on one closes the sockets of that session on the other.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { sessionId } from "chat-gateway/login";
import { redisSessionStore } from "chat-gateway/redis";
import { Client } from "../gateway/harness.js";
import { HASHES, login, request, startStack, tempDir, writeUsers, type Stack } from "../http/helpers.js";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis revocation");

describe.skipIf(!available)("revocation through Redis", () => {
  let prefix: string;
  let redisA: Redis;
  let redisB: Redis;
  let dir: string;
  let cleanup: () => Promise<void>;
  const stacks: Stack[] = [];
  const clients: Client[] = [];
  beforeEach(async () => {
    prefix = `t:${runId()}:`;
    redisA = new Redis(REDIS_URL);
    redisB = new Redis(REDIS_URL);
    ({ dir, cleanup } = await tempDir());
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate();
    for (const s of stacks.splice(0)) await s.close();
    await dropKeys(redisA, prefix);
    redisA.disconnect();
    redisB.disconnect();
    await cleanup();
  });

  it("a logout on one gateway closes the socket of that session on the other with 4401 within a second", async () => {
    const usersFile = path.join(dir, "users.json");
    await writeUsers(usersFile, { alice: HASHES["alice-password"] });
    const a = await startStack({ usersFile, sessions: redisSessionStore(redisA, { prefix }) });
    const b = await startStack({ usersFile, sessions: redisSessionStore(redisB, { prefix }) });
    stacks.push(a, b);
    const [first, second] = await Promise.all([
      login(a.srv.url, "alice", "alice-password"),
      login(a.srv.url, "alice", "alice-password"),
    ]).then((r) => r.map((x) => x.body.token as string));
    const onB = await Client.connect(b.ws, {}, { authorization: `Bearer ${first}` });
    const otherOnB = await Client.connect(b.ws, {}, { authorization: `Bearer ${second}` });
    clients.push(onB, otherOnB);
    const out = await request(a.srv.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: { authorization: `Bearer ${first}`, "content-type": "application/json" },
    });
    expect(out.status).toBe(200);
    const closed = await Promise.race([
      onB.closedPromise,
      new Promise((resolve) => setTimeout(() => resolve("open"), 1000)),
    ]);
    expect(closed).toBe(4401);
    expect((await otherOnB.request("channel.list")).type).toBe("channel.list");
  });

  it("the store tells every subscriber which session or user ended, by the token's SHA-256, never the token", async () => {
    const storeA = redisSessionStore(redisA, { prefix });
    const storeB = redisSessionStore(redisB, { prefix });
    const heard: unknown[] = [];
    const stop = storeB.onRevocation!((r) => heard.push(r));
    try {
      // Publish once Redis counts B's subscriber on the channel (`<prefix>session-revocations`).
      const subscribers = async () =>
        Number(((await redisA.pubsub("NUMSUB", `${prefix}session-revocations`)) as [string, number])[1]);
      while ((await subscribers()) < 1) await new Promise((resolve) => setTimeout(resolve, 10));
      const now = Math.floor(Date.now() / 1000);
      await storeA.create({ token: `tok-${prefix}`, username: "alice", expires_at: now + 60 }, now);
      await storeA.delete(`tok-${prefix}`);
      await storeA.delete("never-existed");
      await storeA.deleteUser("bob");
      // Wait on the messages themselves: the test's timeout is the only limit.
      while (heard.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard).toEqual([{ session: sessionId(`tok-${prefix}`) }, { user: "bob" }]);
    } finally {
      stop();
    }
  });
});
