import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { redisSessionStore } from "chat-gateway/redis";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis session store");

describe.skipIf(!available)("redisSessionStore", () => {
  const prefix = `t:${runId()}:`;
  let a: Redis;
  let b: Redis;
  beforeAll(() => {
    a = new Redis(REDIS_URL);
    b = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    await dropKeys(a, prefix);
    a.disconnect();
    b.disconnect();
  });
  const now = () => Math.floor(Date.now() / 1000);

  test("sessions - a session made through one client is found through another, until deleted", async () => {
    const onA = redisSessionStore(a, { prefix });
    const onB = redisSessionStore(b, { prefix });
    const session = { token: `tok-1-${runId()}`, username: "alice", expires_at: now() + 86_400 };
    await onA.create(session, now());
    expect(await onB.get(session.token, now())).toEqual(session);
    expect(await onB.get(`${session.token}x`, now())).toBeUndefined();
    await onB.delete(session.token);
    expect(await onA.get(session.token, now())).toBeUndefined();
    await onA.delete("unknown");
  });

  test("sessions - keyed by the SHA-256 of the token, which is never stored, with a PX expiry at expires_at", async () => {
    const store = redisSessionStore(a, { prefix });
    const token = `secret-${runId()}`;
    await store.create({ token, username: "bob", expires_at: now() + 86_400 }, now());
    const digest = createHash("sha256").update(token).digest("hex");
    const keys = await a.keys(`${prefix}*`);
    expect(keys).toContain(`${prefix}session:${digest}`);
    expect(keys.some((k) => k.includes(token))).toBe(false);
    expect(JSON.stringify(await a.hgetall(`${prefix}session:${digest}`))).not.toContain(token);
    const pttl = await a.pttl(`${prefix}session:${digest}`);
    expect(pttl).toBeGreaterThan(86_390_000);
    expect(pttl).toBeLessThanOrEqual(86_400_000);
  });

  test("sessions - an expired session reads as absent and is deleted", async () => {
    const store = redisSessionStore(a, { prefix });
    const t = now();
    const session = { token: `old-${runId()}`, username: "carol", expires_at: t + 10 };
    await store.create(session, t);
    expect(await store.get(session.token, t + 9)).toEqual(session);
    expect(await store.get(session.token, t + 10)).toBeUndefined();
    expect(await store.get(session.token, t)).toBeUndefined();
    await store.create({ ...session, token: "born-dead" }, t + 10);
    expect(await store.get("born-dead", t)).toBeUndefined();
  });

  test("sessions - deleteUser ends every session of that user and no other", async () => {
    const store = redisSessionStore(a, { prefix });
    const t = now();
    const mk = (token: string, username: string) => ({ token: `${token}-${runId()}`, username, expires_at: t + 3600 });
    const d1 = mk("d1", "dave");
    const d2 = mk("d2", "dave");
    const e1 = mk("e1", "erin");
    for (const s of [d1, d2, e1]) await store.create(s, t);
    await redisSessionStore(b, { prefix }).deleteUser("dave");
    expect(await store.get(d1.token, t)).toBeUndefined();
    expect(await store.get(d2.token, t)).toBeUndefined();
    expect(await store.get(e1.token, t)).toEqual(e1);
    expect(await a.exists(`${prefix}user-sessions:dave`)).toBe(0);
  });

  test("sessions - a client that is not ioredis is refused at construction", () => {
    expect(() => redisSessionStore({} as Redis)).toThrow(TypeError);
    expect(() => redisSessionStore(a, { prefix: "" })).toThrow(TypeError);
  });
});
