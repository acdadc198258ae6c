// The Redis-specific parts of the lockout store; the rule itself is checked by
// lockout-conformance.test.ts, with the suite of chat-gateway/testing.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { redisLockoutStore } from "chat-gateway/redis";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis lockout store");

describe.skipIf(!available)("redisLockoutStore", () => {
  const prefix = `t:${runId()}:`;
  const a = new Redis(REDIS_URL, { lazyConnect: true });
  const b = new Redis(REDIS_URL, { lazyConnect: true });
  beforeAll(async () => {
    await Promise.all([a.connect(), b.connect()]);
  });
  afterAll(async () => {
    await dropKeys(a, prefix);
    a.disconnect();
    b.disconnect();
  });
  test("lockout - keys expire with their window and lockout", async () => {
    const store = redisLockoutStore(a, { prefix });
    const addr = `10.9.9.${runId()}`;
    await store.fail(addr, Date.now());
    expect(await a.pttl(`${prefix}login-failures:${addr}`)).toBeGreaterThan(299_000);
    for (let i = 0; i < 9; i++) await store.fail(addr, Date.now());
    expect(await a.exists(`${prefix}login-failures:${addr}`)).toBe(0);
    expect(await a.pttl(`${prefix}login-lock:${addr}`)).toBeGreaterThan(899_000);
  });

  test("lockout - bad options are refused at construction", () => {
    expect(() => redisLockoutStore(a, { maxFailures: 0 })).toThrow(TypeError);
    expect(() => redisLockoutStore({} as Redis)).toThrow(TypeError);
  });
});
