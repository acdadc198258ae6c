/**
 * Conformance of the `duePushes` storage capability (docs/PROTOCOL.md §21.6): a waiting push is
 * stored once per owner and key, claimed only once due, earliest first, each by exactly one of
 * many concurrent claims and takes (also through a second instance, as another process), and kept
 * across a reopen when the storage persists.
 * @module
 */
import { describe, expect, test } from "vitest";
import type { DuePushRecord, DuePushStore, Storage, StorageImplementation } from "chat-gateway/storage";
import { defineStorage } from "chat-gateway/storage";
import type { StorageFactory } from "./storage.js";
import { unpack, withStorage } from "./storage-action-tokens.js";

const A = "owner-a";
const B = "owner-b";

function due(key: string, dueAt: number, overrides: Partial<DuePushRecord> = {}): DuePushRecord {
  return { owner: A, key, payload: JSON.stringify({ key, text: "Ünïcode ✓" }), due_at: dueAt, ...overrides };
}

function duePushesOf(storage: Storage): DuePushStore {
  const store = storage.duePushes;
  if (!store) throw new Error("the storage has no duePushes capability");
  return store;
}

/**
 * Declares the tests of the `duePushes` capability for one storage, inside
 * `describe("due pushes conformance: <name>")`. `make` is the factory of
 * `describeStorageConformance`; its `peer` (another process's instance on the same data), when
 * given, takes half of the concurrent calls, and its `reopen` the durability test.
 */
export function describeDuePushConformance(name: string, make: StorageFactory): void {
  describe(`due pushes conformance: ${name}`, () => {
    describeClaims(make);
    describeRaces(make);
    describeDurability(make);
  });
}

function describeClaims(make: StorageFactory): void {
  test("due pushes - claimed once due, earliest first, up to the limit, and gone once claimed", () =>
    withStorage(make, async ({ storage }) => {
      const store = duePushesOf(storage);
      await store.addDuePush(due("m:3", 3_000));
      await store.addDuePush(due("m:1", 1_000));
      await store.addDuePush(due("m:1", 1_000, { owner: B }));
      await store.addDuePush(due("p:2", 2_000));
      expect(await store.claimDuePushes(999, 10)).toEqual([]);
      const first = await store.claimDuePushes(2_000, 2);
      expect(first.map((r) => r.due_at)).toEqual([1_000, 1_000]);
      expect(first.map((r) => r.owner).sort()).toEqual([A, B]);
      expect(first.find((r) => r.owner === A)).toEqual(due("m:1", 1_000));
      expect(await store.claimDuePushes(2_000, 10)).toEqual([due("p:2", 2_000)]);
      expect(await store.claimDuePushes(2_000, 10)).toEqual([]);
      expect(await store.claimDuePushes(10_000, 10)).toEqual([due("m:3", 3_000)]);
    }));

  test("due pushes - stored once per owner and key; a take removes it, due or not, once", () =>
    withStorage(make, async ({ storage }) => {
      const store = duePushesOf(storage);
      await store.addDuePush(due("m:1", 1_000));
      await store.addDuePush(due("m:1", 500, { payload: "{}" }));
      await store.addDuePush(due("m:2", 1_000));
      expect(await store.dropDuePush(A, "m:2")).toBe(true);
      expect(await store.dropDuePush(A, "m:2")).toBe(false);
      expect(await store.dropDuePush(B, "m:1")).toBe(false);
      expect(await store.claimDuePushes(1_000, 10)).toEqual([due("m:1", 1_000)]);
      expect(await store.dropDuePush(A, "m:1")).toBe(false);
    }));
}

function describeRaces(make: StorageFactory): void {
  test("due pushes - 40 claims of one due push at once, half through a second instance: one winner", () =>
    withStorage(make, async ({ storage, peer }) => {
      await duePushesOf(storage).addDuePush(due("m:1", 1_000));
      const claims = await Promise.all(
        Array.from({ length: 40 }, (_, i) => duePushesOf(i % 2 ? peer : storage).claimDuePushes(5_000, 5)),
      );
      expect(claims.flat()).toEqual([due("m:1", 1_000)]);
    }));

  test("due pushes - 30 pushes, 20 claims and 10 takes at once over two instances: each taken exactly once", () =>
    withStorage(make, async ({ storage, peer }) => {
      const keys = Array.from({ length: 30 }, (_, i) => `m:${String(i).padStart(2, "0")}`);
      for (const key of keys) await duePushesOf(storage).addDuePush(due(key, 1_000));
      const claims = Array.from({ length: 20 }, (_, i) => duePushesOf(i % 2 ? peer : storage).claimDuePushes(1_000, 3));
      const takes = keys.slice(0, 10).map((key, i) =>
        duePushesOf(i % 2 ? storage : peer)
          .dropDuePush(A, key)
          .then((won) => (won ? [key] : [])),
      );
      const claimed = (await Promise.all(claims)).flat().map((r) => r.key);
      const taken = (await Promise.all(takes)).flat();
      const rest = (await duePushesOf(peer).claimDuePushes(1_000, 100)).map((r) => r.key);
      expect([...claimed, ...taken, ...rest].sort()).toEqual(keys);
    }));
}

function describeDurability(make: StorageFactory): void {
  test("due pushes - kept across a close and a new instance (when the storage persists)", async () => {
    const under = unpack(await make());
    if (!under.reopen) {
      await under.cleanup?.();
      return;
    }
    const storage = defineStorage(under.storage as StorageImplementation);
    await storage.open();
    await duePushesOf(storage).addDuePush(due("m:1", 1_000));
    await duePushesOf(storage).addDuePush(due("m:2", 2_000));
    expect(await duePushesOf(storage).claimDuePushes(1_000, 10)).toEqual([due("m:1", 1_000)]);
    await storage.close();
    const again = defineStorage(under.reopen() as StorageImplementation);
    await again.open();
    try {
      expect(await duePushesOf(again).claimDuePushes(5_000, 10)).toEqual([due("m:2", 2_000)]);
    } finally {
      await again.close();
      await under.cleanup?.();
    }
  });
}
