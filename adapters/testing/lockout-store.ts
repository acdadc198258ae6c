// The LockoutStore conformance suite (failed-login lockout), exported by "chat-gateway/testing".
import { randomBytes } from "node:crypto";
import { beforeEach, describe, expect, test } from "vitest";
import type { LockoutStore } from "chat-gateway/login";
import { eachTest } from "./under-test.js";

/** A lockout store under test: the store, optionally a second one on the same data, and the clean-up. */
export interface LockoutStoreUnderTest {
  store: LockoutStore;
  /** A second store sharing the counts, as another process would have; without it `store` itself. */
  peer?: LockoutStore;
  /** Runs after the test. */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the lockout store for one test: called before every test, it returns a store (or a
 * {@link LockoutStoreUnderTest}) with the rule's defaults. The suite uses fresh IPs in each test.
 */
export type LockoutStoreFactory = () =>
  | LockoutStore
  | LockoutStoreUnderTest
  | Promise<LockoutStore | LockoutStoreUnderTest>;

const S = 1000;

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the `LockoutStore` contract
 * of `chat-gateway/login` (docs/PROTOCOL.md §9.6) for one implementation, inside a
 * `describe("lockout store conformance: <name>")` block:
 *
 * ```ts
 * import { describeLockoutStoreConformance } from "chat-gateway/testing";
 * describeLockoutStoreConformance("my store", () => myLockoutStore());
 * ```
 *
 * What it checks, with times near the real clock (a store may also expire keys on its own):
 * - 10 failures within 300 s lock the IP for 900 s (`retryAfter` in whole seconds) and clear its
 *   failures; attempts during a lockout neither count nor extend it;
 * - failures older than the window do not count, one exactly 300 s old does; a success clears the
 *   failures but not a running lockout;
 * - IPs are independent, failures spread over the store and its peer add up and both see the
 *   lockout, and 10 failures recorded at once lock exactly once.
 *
 * @param name Shown in the test names, e.g. `"redis"`.
 * @param make Makes the store for one test; see {@link LockoutStoreFactory}.
 */
export function describeLockoutStoreConformance(name: string, make: LockoutStoreFactory): void {
  describe(`lockout store conformance: ${name}`, () => {
    const current = eachTest<"store", LockoutStore>("store", make, (made): made is LockoutStore => "fail" in made);
    let store: LockoutStore;
    let peer: LockoutStore;
    let t0: number;
    const ip = () => `10.${randomBytes(3).join(".")}`;
    beforeEach(() => {
      ({ value: store, peer } = current);
      t0 = Date.now();
    });

    test("lockout - 10 failures within 300 s lock the IP for 900 s and clear its failures", async () => {
      const addr = ip();
      for (let i = 0; i < 9; i++) expect(await store.fail(addr, t0 + i * S)).toBe(false);
      expect(await store.check(addr, t0 + 9 * S)).toEqual({ locked: false, failures: 9 });
      expect(await store.fail(addr, t0 + 9 * S)).toBe(true);
      expect(await store.check(addr, t0 + 9 * S)).toEqual({ locked: true, retryAfter: 900, failures: 0 });
      expect(await store.check(addr, t0 + (9 + 899) * S)).toMatchObject({ locked: true, retryAfter: 1 });
      expect(await store.check(addr, t0 + (9 + 899.5) * S)).toMatchObject({ locked: true, retryAfter: 1 });
    });

    test("lockout - attempts during a lockout neither count nor extend it", async () => {
      const addr = ip();
      for (let i = 0; i < 10; i++) await store.fail(addr, t0);
      expect(await store.fail(addr, t0 + 100 * S)).toBe(false);
      expect(await store.check(addr, t0 + 100 * S)).toMatchObject({ locked: true, retryAfter: 800 });
      expect(await store.check(addr, t0 + 900 * S)).toEqual({ locked: false, failures: 0 });
      expect(await store.fail(addr, t0 + 900 * S)).toBe(false);
    });

    test("window - failures older than 300 s do not count; one exactly 300 s old does", async () => {
      const old = ip();
      for (const s of [0, 100, 101, 102, 103, 104, 105, 106, 107]) await store.fail(old, t0 + s * S);
      expect(await store.fail(old, t0 + 301 * S)).toBe(false);
      expect(await store.check(old, t0 + 301 * S)).toEqual({ locked: false, failures: 9 });
      const edge = ip();
      for (let i = 0; i < 9; i++) await store.fail(edge, t0 + i * S);
      expect(await store.fail(edge, t0 + 300 * S)).toBe(true);
    });

    test("success - clears the failures but not a running lockout", async () => {
      const addr = ip();
      for (let i = 0; i < 9; i++) await store.fail(addr, t0 + i * S);
      await store.succeed(addr);
      expect(await store.check(addr, t0 + 10 * S)).toEqual({ locked: false, failures: 0 });
      for (let i = 0; i < 10; i++) await store.fail(addr, t0 + (20 + i) * S);
      await store.succeed(addr);
      expect((await store.check(addr, t0 + 30 * S)).locked).toBe(true);
    });

    test("processes - IPs are independent; failures in the store and its peer add up, both see the lockout", async () => {
      const addr = ip();
      const other = ip();
      for (let i = 0; i < 5; i++) await store.fail(addr, t0 + i * S);
      for (let i = 0; i < 4; i++) expect(await peer.fail(addr, t0 + (5 + i) * S)).toBe(false);
      expect(await store.fail(addr, t0 + 9 * S)).toBe(true);
      expect((await peer.check(addr, t0 + 10 * S)).locked).toBe(true);
      expect(await store.check(other, t0 + 10 * S)).toEqual({ locked: false, failures: 0 });
    });

    test("concurrency - 10 failures recorded at once lock the IP exactly once", async () => {
      const addr = ip();
      const started = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? peer : store).fail(addr, t0 + S)),
      );
      expect(started.filter(Boolean)).toHaveLength(1);
      expect((await store.check(addr, t0 + 2 * S)).locked).toBe(true);
    });
  });
}
