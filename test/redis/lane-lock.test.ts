import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { redisLaneLock } from "chat-gateway/redis";
import { recordingLogger } from "../fixtures/recording-logger.js";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis lane lock");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const never = () => new AbortController().signal;
async function until(done: () => boolean, ms = 3000): Promise<void> {
  for (const end = Date.now() + ms; !done(); await sleep(20)) if (Date.now() > end) throw new Error("timed out");
}

describe.skipIf(!available)("redisLaneLock", () => {
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

  test("lane lock - one holder per lane across processes; the next waits for the release", async () => {
    const lockA = redisLaneLock(a, { prefix, ttlMs: 2000 });
    const lockB = redisLaneLock(b, { prefix, ttlMs: 2000 });
    const held = await lockA.acquire("alice/c1", never());
    let got = false;
    const waiting = lockB.acquire("alice/c1", never()).then((lease) => {
      got = true;
      return lease;
    });
    const other = await lockB.acquire("alice/c2", never());
    await sleep(150);
    expect(got).toBe(false);
    await held.release();
    const lease = await waiting;
    expect(got).toBe(true);
    await lease.release();
    await other.release();
    await held.release();
  });

  test("lane lock - a live holder keeps its lease past ttlMs by renewing it", async () => {
    // The holder's renewals that Redis accepted (RENEW answers 1 while the lease is ours).
    let renewed = 0;
    const counted = new Proxy(a, {
      get: (target, key, receiver) =>
        key === "eval"
          ? (...args: unknown[]) =>
              (Reflect.apply(target.eval, target, args) as Promise<unknown>).then((answer) => {
                if (answer === 1) renewed++;
                return answer;
              })
          : Reflect.get(target, key, receiver),
    });
    // A ttl well above a busy machine's stalls: a renewal every second keeps a 3 s lease alive.
    const lockA = redisLaneLock(counted, { prefix, ttlMs: 3_000 });
    const lockB = redisLaneLock(b, { prefix, ttlMs: 3_000 });
    const held = await lockA.acquire("renew", never());
    const controller = new AbortController();
    let granted = false;
    const waiting = lockB.acquire("renew", controller.signal);
    waiting.then(() => (granted = true)).catch(() => undefined);
    // Four renewals a third of ttlMs apart: past the first lease's ttlMs, counted in renewals, not time.
    await until(() => renewed >= 4 || granted, 15_000);
    expect(granted).toBe(false);
    controller.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    await held.release();
  });

  test("lane lock - a crashed holder's lease expires and the lane is taken within ttlMs", async () => {
    // A process that died holding the lane: its key stays, nobody renews it.
    await a.set(`${prefix}lane:crashed`, "dead-process", "PX", 400);
    // The waiter's attempts, as Redis answered them ("OK" taken, null refused).
    const answers: unknown[] = [];
    const watched = new Proxy(b, {
      get: (target, key, receiver) =>
        key === "set"
          ? (...args: unknown[]) =>
              (Reflect.apply(target.set, target, args) as Promise<unknown>).then((answer) => {
                answers.push(answer);
                return answer;
              })
          : Reflect.get(target, key, receiver),
    });
    const started = Date.now();
    // maxWaitMs outlasts the test: the lane coming free (the dead lease expiring) is the only way out.
    const lease = await redisLaneLock(watched, { prefix, ttlMs: 400, pollMs: 20, maxWaitMs: 60_000 }).acquire(
      "crashed",
      never(),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    // Refused while the dead lease lived, polling on, then taken once it expired.
    expect(answers.length).toBeGreaterThanOrEqual(2);
    expect(answers.slice(0, -1).every((answer) => answer === null)).toBe(true);
    expect(answers.at(-1)).toBe("OK");
    expect(await a.get(`${prefix}lane:crashed`)).not.toBe("dead-process");
    await lease.release();
  });

  test("lane lock - releasing an expired lease never frees the new holder's", async () => {
    const lockA = redisLaneLock(a, { prefix, ttlMs: 5000, warn: () => undefined });
    const stale = await lockA.acquire("stale", never());
    await a.del(`${prefix}lane:stale`);
    const fresh = await redisLaneLock(b, { prefix, ttlMs: 5000 }).acquire("stale", never());
    await stale.release();
    expect(await a.exists(`${prefix}lane:stale`)).toBe(1);
    await fresh.release();
    expect(await a.exists(`${prefix}lane:stale`)).toBe(0);
  });

  test("lane lock - an abort while waiting rejects, and maxWaitMs bounds the wait", async () => {
    const held = await redisLaneLock(a, { prefix }).acquire("busy", never());
    const aborted = AbortSignal.abort(new Error("stopped"));
    await expect(redisLaneLock(b, { prefix }).acquire("busy", aborted)).rejects.toThrow("stopped");
    await expect(redisLaneLock(b, { prefix, maxWaitMs: 200 }).acquire("busy", never())).rejects.toThrow(/still held/);
    await held.release();
  });

  test("lane lock - a lease lost to another process is a warning on the given logger; the deprecated warn still gets it", async () => {
    const logger = recordingLogger();
    const legacy: string[] = [];
    const viaLogger = await redisLaneLock(a, { prefix, ttlMs: 300, logger }).acquire("lost-1", never());
    const viaAlias = await redisLaneLock(a, { prefix, ttlMs: 300, warn: (m) => legacy.push(m) }).acquire(
      "lost-2",
      never(),
    );
    // Another process took the lanes over (as after an outage longer than ttlMs).
    await b.set(`${prefix}lane:lost-1`, "someone-else", "PX", 5000);
    await b.set(`${prefix}lane:lost-2`, "someone-else", "PX", 5000);
    await until(() => logger.lines.warn.length > 0 && legacy.length > 0);
    expect(logger.lines.warn).toEqual([expect.stringMatching(/^lease of lane lost-1 was lost/)]);
    expect(legacy).toEqual([expect.stringMatching(/^lease of lane lost-2 was lost/)]);
    await viaLogger.release();
    await viaAlias.release();
    // Releasing a lost lease leaves the new holder's key alone.
    expect(await b.get(`${prefix}lane:lost-1`)).toBe("someone-else");
  });

  test("lane lock - bad options are refused at construction", () => {
    expect(() => redisLaneLock(a, { ttlMs: 0 })).toThrow(TypeError);
    expect(() => redisLaneLock(a, { pollMs: -1 })).toThrow(TypeError);
    expect(() => redisLaneLock(null as unknown as Redis)).toThrow(TypeError);
    expect(() => redisLaneLock(a, { logger: console.warn as never })).toThrow(
      /redisLaneLock: logger must be an object with info, warn and error methods/,
    );
    expect(() => redisLaneLock(a, { warn: "console" as never })).toThrow(/redisLaneLock: warn must be a function/);
  });
});
