// The LaneLock conformance suite, exported by "chat-gateway/testing".
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { LaneLease, LaneLock } from "chat-gateway";
import { eachTest, type Current } from "./under-test.js";
import { sleep, within } from "./wait.js";

/** A lane lock under test: the lock, optionally a second one on the same medium, and the clean-up. */
export interface LaneLockUnderTest {
  lock: LaneLock;
  /** A second lock sharing the lanes, as another process would have; without it `lock` itself. */
  peer?: LaneLock;
  /** Runs after the test. */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the lane lock for one test: called before every test, it must return a lock (or a
 * {@link LaneLockUnderTest}) that shares no lanes with the ones it made before (a new key prefix).
 * A short lease lifetime (a few hundred milliseconds) lets the suite check that a live holder
 * keeps its lane while it renews.
 */
export type LaneLockFactory = () => LaneLock | LaneLockUnderTest | Promise<LaneLock | LaneLockUnderTest>;

const forever = () => new AbortController().signal;

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link LaneLock}
 * contract for one implementation, inside a `describe("lane lock conformance: <name>")` block:
 *
 * ```ts
 * import { describeLaneLockConformance } from "chat-gateway/testing";
 * describeLaneLockConformance("my lock", () => ({ lock: myLock(), peer: myLock() }));
 * ```
 *
 * What it checks:
 * - one holder per key: a second acquirer (in this lock or its peer) waits until the release and
 *   then gets the lane promptly; other keys are independent;
 * - 12 acquirers of one key, half of them on the peer, hold it one at a time and all get it;
 * - a live holder keeps its lane for 1.5 s while another waits (renewing as it must);
 * - `release` is idempotent: releasing twice never frees the next holder's lease;
 * - `signal`: an abort while waiting rejects with the signal's reason and takes nothing; an
 *   already aborted signal rejects at once.
 *
 * Not checked, since it needs a holder that dies: that a crashed holder's lease expires.
 *
 * @param name Shown in the test names, e.g. `"redis"`.
 * @param make Makes the lock for one test; see {@link LaneLockFactory}.
 */
export function describeLaneLockConformance(name: string, make: LaneLockFactory): void {
  describe(`lane lock conformance: ${name}`, () => {
    const current = eachTest<"lock", LaneLock>("lock", make, (made): made is LaneLock => "acquire" in made);
    let lock: LaneLock;
    let peer: LaneLock;
    beforeEach(() => {
      ({ value: lock, peer } = current);
    });
    const held: LaneLease[] = [];
    const take = async (from: LaneLock, key: string, signal = forever()) => {
      const lease = await from.acquire(key, signal);
      held.push(lease);
      return lease;
    };

    // Registered after eachTest's, so it runs before it: leases go before the lock's clean-up.
    afterEach(async () => {
      await Promise.all(held.splice(0).map((lease) => lease.release()));
    });

    test("exclusion - a second acquirer waits for the release; other keys are independent", async () => {
      const first = await take(lock, "alice/c1");
      const second = take(peer, "alice/c1");
      expect(await within(take(peer, "alice/c2"), "another key")).toBeDefined();
      expect(await within(take(lock, "bob/c1"), "another owner's key")).toBeDefined();
      expect(await stillWaiting(second)).toBe(true);
      await first.release();
      await within(second, "the lane after its release", 2_000);
    });

    test("exclusion - 12 acquirers of one key hold it one at a time and all get it", async () => {
      let holding = 0;
      let most = 0;
      let done = 0;
      await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const lease = await take(i % 2 ? peer : lock, "busy");
          holding++;
          most = Math.max(most, holding);
          await sleep(5);
          holding--;
          done++;
          await lease.release();
        }),
      );
      expect(done).toBe(12);
      expect(most).toBe(1);
    });

    test("renewal - a live holder keeps its lane for 1.5 s while another waits", async () => {
      const first = await take(lock, "long-turn");
      const second = take(peer, "long-turn");
      expect(await stillWaiting(second, 1_500)).toBe(true);
      await first.release();
      await within(second, "the lane after its release", 2_000);
    });

    test("release - is idempotent and never frees the next holder's lease", async () => {
      const first = await take(lock, "twice");
      const second = take(peer, "twice");
      await first.release();
      await second;
      await first.release();
      const controller = new AbortController();
      const third = take(lock, "twice", controller.signal);
      expect(await stillWaiting(third)).toBe(true);
      controller.abort(new Error("done waiting"));
      await expect(third).rejects.toThrow("done waiting");
    });

    describeSignalTests(current, take);
  });
}

/** Whether `pending` is still unsettled after `ms` milliseconds. */
async function stillWaiting(pending: Promise<unknown>, ms = 200): Promise<boolean> {
  let settled = false;
  pending.then(
    () => (settled = true),
    () => (settled = true),
  );
  await sleep(ms);
  return !settled;
}

/** What `signal` does to an acquire, and any key string. */
function describeSignalTests(
  current: Current<LaneLock>,
  take: (from: LaneLock, key: string, signal?: AbortSignal) => Promise<LaneLease>,
): void {
  let lock: LaneLock;
  let peer: LaneLock;
  beforeEach(() => {
    ({ value: lock, peer } = current);
  });

  test("signal - an abort while waiting rejects with its reason and takes nothing", async () => {
    const first = await take(lock, "aborted");
    const controller = new AbortController();
    const waiting = take(peer, "aborted", controller.signal);
    waiting.catch(() => undefined);
    await sleep(50);
    const reason = new Error("stopped by the test");
    controller.abort(reason);
    await expect(within(waiting, "the aborted acquire to reject")).rejects.toBe(reason);
    const third = take(lock, "aborted");
    await first.release();
    await within(third, "the lane after the aborted waiter left", 2_000);
  });

  test("signal - an already aborted signal rejects at once", async () => {
    const reason = new Error("already stopped");
    await expect(within(lock.acquire("free", AbortSignal.abort(reason)), "the acquire to reject")).rejects.toBe(reason);
    await within(take(peer, "free"), "the free lane", 2_000);
  });

  test("keys - any key string is its own lane", async () => {
    const keys = ["a", "a/", "A", "*", "a:b", "é🎉", "x".repeat(500)];
    const leases = await within(Promise.all(keys.map((key) => take(lock, key))), "every key at once");
    expect(leases).toHaveLength(keys.length);
  });
}
