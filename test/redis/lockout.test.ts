import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { memoryLockoutStore, type LockoutStore } from "chat-gateway/http";
import { redisLockoutStore } from "chat-gateway/redis";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis lockout store");
const S = 1000;

/** The rule of the login seed, checked against any LockoutStore (memory first, as the reference). */
function describeLockoutStore(name: string, make: () => LockoutStore, other: () => LockoutStore): void {
  describe(name, () => {
    // Real-time based, because Redis also expires the keys on its own clock.
    const t0 = Date.now();
    let ipN = 0;
    const ip = () => `10.0.${runId()}.${++ipN}`;

    test("lockout - 10 failures within 300 s lock the IP for 900 s and clear its failures", async () => {
      const store = make();
      const addr = ip();
      for (let i = 0; i < 9; i++) expect(await store.fail(addr, t0 + i * S)).toBe(false);
      expect(await store.check(addr, t0 + 9 * S)).toEqual({ locked: false, failures: 9 });
      expect(await store.fail(addr, t0 + 9 * S)).toBe(true);
      expect(await store.check(addr, t0 + 9 * S)).toEqual({ locked: true, retryAfter: 900, failures: 0 });
      expect(await store.check(addr, t0 + (9 + 899) * S)).toMatchObject({ locked: true, retryAfter: 1 });
      // Attempts during a lockout neither count nor extend it.
      expect(await store.fail(addr, t0 + 100 * S)).toBe(false);
      expect(await store.check(addr, t0 + (9 + 900) * S)).toEqual({ locked: false, failures: 0 });
    });

    test("lockout - failures older than the window do not count; a success clears them", async () => {
      const store = make();
      const addr = ip();
      for (let i = 0; i < 9; i++) await store.fail(addr, t0 + i * S);
      expect(await store.fail(addr, t0 + 301 * S)).toBe(false);
      expect((await store.check(addr, t0 + 301 * S)).failures).toBe(9);
      await store.succeed(addr);
      expect(await store.check(addr, t0 + 302 * S)).toEqual({ locked: false, failures: 0 });
    });

    test("lockout - failures spread over processes add up, and each process sees the lockout", async () => {
      const first = make();
      const second = other();
      const addr = ip();
      for (let i = 0; i < 5; i++) await first.fail(addr, t0 + i * S);
      for (let i = 0; i < 4; i++) expect(await second.fail(addr, t0 + (5 + i) * S)).toBe(false);
      expect(await first.fail(addr, t0 + 9 * S)).toBe(true);
      expect((await second.check(addr, t0 + 10 * S)).locked).toBe(true);
      expect((await first.check(ip(), t0 + 10 * S)).locked).toBe(false);
    });
  });
}

const memory = memoryLockoutStore();
describeLockoutStore("memoryLockoutStore", () => memory, () => memory);

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
  describeLockoutStore("on Redis", () => redisLockoutStore(a, { prefix }), () => redisLockoutStore(b, { prefix }));

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
