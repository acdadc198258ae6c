// The HookStore conformance suite (docs/PROTOCOL.md §17), exported by "chat-gateway/testing".
import { beforeEach, describe, expect, test } from "vitest";
import type { HookRecord, HookStore } from "chat-gateway/storage";
import { eachTest } from "./under-test.js";

/** A hook store under test: the store, optionally a second one on the same data, and the clean-up. */
export interface HookStoreUnderTest {
  /** Ready to use: the suite opens nothing (open a storage that is also the store before returning it). */
  store: HookStore;
  /** A second store on the same data, as another process would have; without it `store` itself. */
  peer?: HookStore;
  /** Runs after the test (close the storage, drop a schema, remove a folder). */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the hook store for one test: called before every test, it must return an empty store (or
 * a {@link HookStoreUnderTest}) that shares no hooks with the ones it made before.
 */
export type HookStoreFactory = () => HookStore | HookStoreUnderTest | Promise<HookStore | HookStoreUnderTest>;

const A = "alice";
const B = "bob";

function hook(id: string, overrides: Partial<HookRecord> = {}): HookRecord {
  return {
    hook_id: id,
    name: id,
    chat_id: "c1",
    mode: "post",
    secret: `secret-${id}`,
    created_at: 1_000,
    ...overrides,
  };
}

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link HookStore}
 * contract (webhooks, docs/PROTOCOL.md §17) for one implementation, inside a
 * `describe("hook store conformance: <name>")` block:
 *
 * ```ts
 * import { describeHookStoreConformance } from "chat-gateway/testing";
 * describeHookStoreConformance("my store", () => myHookStore());
 * ```
 *
 * What it checks, for two owners:
 * - records: a hook is found by id with its owner (through the peer too), listed per owner, its
 *   secret kept as given, and what was passed in or returned is a copy;
 * - names: a new hook of a name replaces the old one (whose id then finds nothing); `deleteHook`
 *   is per owner and forgets the hook's keys;
 * - delivery keys: a key is taken once until it expires, answers the `message_id` it was settled
 *   with, can be given up, and is per hook;
 * - concurrency: of many claims of one key at once, half through the peer, exactly one wins; so
 *   does one claim per key when many keys are claimed at once.
 *
 * @param name Shown in the test names, e.g. `"postgres"`.
 * @param make Makes the store for one test; see {@link HookStoreFactory}.
 */
export function describeHookStoreConformance(name: string, make: HookStoreFactory): void {
  describe(`hook store conformance: ${name}`, () => {
    const current = eachTest<"store", HookStore>("store", make, (made): made is HookStore => "putHook" in made);
    let store: HookStore;
    let peer: HookStore;
    beforeEach(() => {
      ({ value: store, peer } = current);
    });

    test("hooks - found by id with their owner, listed per owner, secret kept as given", async () => {
      await store.putHook(A, hook("h1"));
      await peer.putHook(B, hook("h2", { mode: "turn" }));
      expect(await peer.getHook("h1")).toEqual({ owner: A, hook: hook("h1") });
      expect(await store.getHook("h2")).toEqual({ owner: B, hook: hook("h2", { mode: "turn" }) });
      expect(await store.getHook("h3")).toBeUndefined();
      expect(await store.listHooks(A)).toEqual([hook("h1")]);
      expect(await peer.listHooks(B)).toEqual([hook("h2", { mode: "turn" })]);
      expect(await store.listHooks("nobody")).toEqual([]);
    });

    test("hooks - what was passed in or returned is a copy", async () => {
      const given = hook("h1");
      await store.putHook(A, given);
      given.secret = "changed";
      const found = (await store.getHook("h1"))!;
      found.hook.chat_id = "mutated";
      (await store.listHooks(A))[0]!.name = "mutated";
      expect(await store.getHook("h1")).toEqual({ owner: A, hook: hook("h1") });
    });

    test("hooks - a new hook of a name replaces the old one; deleteHook is per owner", async () => {
      await store.putHook(A, hook("h1", { name: "ci" }));
      await store.putHook(A, hook("h9", { name: "ci", secret: "rotated" }));
      await store.putHook(B, hook("h5", { name: "ci" }));
      expect(await store.getHook("h1")).toBeUndefined();
      expect(await store.listHooks(A)).toEqual([hook("h9", { name: "ci", secret: "rotated" })]);
      expect(await store.deleteHook(B, "h9")).toBe(false);
      expect(await store.deleteHook(A, "h9")).toBe(true);
      expect(await store.getHook("h9")).toBeUndefined();
      expect(await store.deleteHook(A, "h9")).toBe(false);
      expect(await store.listHooks(B)).toEqual([hook("h5", { name: "ci" })]);
    });

    describeKeys(() => ({ store, peer }));
  });
}

/** Delivery keys: taken once until they expire, settled, given up, and claimed once at a time. */
function describeKeys(use: () => { store: HookStore; peer: HookStore }): void {
  test("keys - a key is taken once until it expires, answers its message_id, and can be given up", async () => {
    const { store, peer } = use();
    await store.putHook(A, hook("h1"));
    await store.putHook(A, hook("h2"));
    expect(await store.claimHookKey("h1", "k", 2_000, 1_000)).toEqual({ claimed: true });
    expect(await peer.claimHookKey("h1", "k", 2_000, 1_500)).toEqual({ claimed: false });
    expect(await store.claimHookKey("h2", "k", 2_000, 1_500)).toEqual({ claimed: true });
    await store.settleHookKey("h1", "k", "m1");
    expect(await peer.claimHookKey("h1", "k", 2_000, 1_600)).toEqual({ claimed: false, message_id: "m1" });
    expect(await store.claimHookKey("h1", "k", 9_000, 2_000)).toEqual({ claimed: true });
    await store.settleHookKey("h1", "k", null);
    expect(await store.claimHookKey("h1", "k", 9_000, 2_100)).toEqual({ claimed: true });
    await store.settleHookKey("h1", "never-claimed", "m2");
    expect(await store.claimHookKey("h1", "never-claimed", 9_000, 2_100)).toEqual({ claimed: true });
  });

  test("keys - a deleted hook's keys are forgotten with it", async () => {
    const { store, peer } = use();
    await store.putHook(A, hook("h1"));
    expect(await store.claimHookKey("h1", "k", 9_000, 1_000)).toEqual({ claimed: true });
    await peer.deleteHook(A, "h1");
    await store.putHook(A, hook("h1"));
    expect(await store.claimHookKey("h1", "k", 9_000, 1_000)).toEqual({ claimed: true });
  });

  test("concurrency - of concurrent claims of one key, half through the peer, exactly one wins", async () => {
    const { store, peer } = use();
    await store.putHook(A, hook("h1"));
    const claims = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? peer : store).claimHookKey("h1", "same", 5_000, 1_000)),
    );
    expect(claims.filter((c) => c.claimed)).toHaveLength(1);
    expect(claims.filter((c) => !c.claimed)).toEqual(Array(15).fill({ claimed: false }));
  });

  test("concurrency - many keys claimed at once, each twice: one claim of each wins", async () => {
    const { store, peer } = use();
    await store.putHook(A, hook("h1"));
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const claims = await Promise.all(
      keys.flatMap((key) => [store, peer].map((s) => s.claimHookKey("h1", key, 5_000, 1_000))),
    );
    expect(claims.filter((c) => c.claimed)).toHaveLength(keys.length);
    for (let i = 0; i < keys.length; i++)
      expect([claims[2 * i]!.claimed, claims[2 * i + 1]!.claimed].sort()).toEqual([false, true]);
  });
}
