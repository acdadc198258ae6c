/**
 * Conformance of the `actionTokens` storage capability (docs/PROTOCOL.md §21): tokens found by
 * hash whichever owner has them, each settled once however many settle it at once (also through
 * a second instance, as another process), listed per ask, forgotten when expired, and kept across
 * a reopen when the storage persists.
 * @module
 */
import { describe, expect, test } from "vitest";
import type { ActionTokenRecord, ActionTokenStore, Storage, StorageImplementation } from "chat-gateway/storage";
import { defineStorage } from "chat-gateway/storage";
import type { StorageFactory, StorageUnderTest } from "./storage.js";

const A = "owner-a";
const B = "owner-b";

function token(n: number, overrides: Partial<ActionTokenRecord> = {}): ActionTokenRecord {
  return {
    hash: n.toString(16).padStart(64, "0"),
    owner: A,
    picker_id: "pk1",
    option_id: "approve",
    device_id: "phone",
    target: '["webpush","target","https://push.example/1"]',
    expires_at: 10_000,
    ...overrides,
  };
}

export function unpack(made: Storage | StorageImplementation | StorageUnderTest): StorageUnderTest {
  return "storage" in made && typeof (made as StorageUnderTest).storage === "object"
    ? (made as StorageUnderTest)
    : { storage: made as Storage };
}

function tokensOf(storage: Storage): ActionTokenStore {
  const store = storage.actionTokens;
  if (!store) throw new Error("the storage has no actionTokens capability");
  return store;
}

/**
 * Declares the tests of the `actionTokens` capability for one storage, inside
 * `describe("action tokens conformance: <name>")`. `make` is the factory of
 * `describeStorageConformance`; its `peer` (another process's instance on the same data), when
 * given, takes half of the concurrent calls, and its `reopen` the durability test.
 */
export type Opened = { storage: Storage; peer: Storage; done: () => Promise<void> };

/** Opens a fresh storage of the factory, and its peer when it has one. */
async function opened(make: StorageFactory): Promise<Opened> {
  const under = unpack(await make());
  const storage = defineStorage(under.storage as StorageImplementation);
  const peer = under.peer ? defineStorage(under.peer as StorageImplementation) : storage;
  await storage.open();
  if (peer !== storage) await peer.open();
  return {
    storage,
    peer,
    done: async () => {
      await storage.close();
      if (peer !== storage) await peer.close();
      await under.cleanup?.();
    },
  };
}

/** Runs `check` on a fresh storage, closing it after (also the due pushes' suite). */
export async function withStorage(make: StorageFactory, check: (opened: Opened) => Promise<void>): Promise<void> {
  const made = await opened(make);
  try {
    await check(made);
  } finally {
    await made.done();
  }
}

/**
 * Declares the tests of the `actionTokens` capability for one storage, inside
 * `describe("action tokens conformance: <name>")`. `make` is the factory of
 * `describeStorageConformance`; its `peer` (another process's instance on the same data), when
 * given, takes half of the concurrent calls, and its `reopen` the durability test.
 */
export function describeActionTokenConformance(name: string, make: StorageFactory): void {
  describe(`action tokens conformance: ${name}`, () => {
    describeRecords(make);
    describeSettling(make);
    describeDurability(make);
  });
}

function describeRecords(make: StorageFactory): void {
  test("action tokens - found by hash with what they are bound to, whichever owner has them", () =>
    withStorage(make, async ({ storage }) => {
      const store = tokensOf(storage);
      const bobs = token(2, { owner: B, option_id: "deny", device_id: "tab" });
      await store.putActionTokens([token(1), bobs]);
      expect(await store.getActionToken(token(1).hash)).toEqual(token(1));
      expect(await store.getActionToken(bobs.hash)).toEqual(bobs);
      expect(await store.getActionToken(token(3).hash)).toBeUndefined();
      await store.putActionTokens([token(1, { option_id: "other" })]);
      expect((await store.getActionToken(token(1).hash))?.option_id).toBe("approve");
    }));

  test("action tokens - listed per owner and ask, and forgotten once expired", () =>
    withStorage(make, async ({ storage }) => {
      const store = tokensOf(storage);
      const later = token(3, { picker_id: "pk2", expires_at: 20_000 });
      await store.putActionTokens([token(1), token(2, { option_id: "deny" }), later, token(4, { owner: B })]);
      const listed = await store.actionTokensOf(A, "pk1");
      expect(listed.map((t) => t.hash).sort()).toEqual([token(1).hash, token(2).hash]);
      expect(await store.deleteExpiredActionTokens(10_000)).toBe(3);
      expect(await store.actionTokensOf(A, "pk1")).toEqual([]);
      expect(await store.getActionToken(later.hash)).toEqual(later);
    }));
}

function describeSettling(make: StorageFactory): void {
  test("action tokens - settled once: the first outcome stands, later ones change nothing", () =>
    withStorage(make, async ({ storage }) => {
      const store = tokensOf(storage);
      await store.putActionTokens([token(1)]);
      expect(await store.settleActionToken(token(1).hash, "first")).toBe("first");
      expect(await store.settleActionToken(token(1).hash, "second")).toBe("first");
      expect((await store.getActionToken(token(1).hash))?.outcome).toBe("first");
      expect(await store.settleActionToken(token(9).hash, "none")).toBeUndefined();
    }));

  test("action tokens - 40 settles of one token at once, half through a second instance: one outcome for all", () =>
    withStorage(make, async ({ storage, peer }) => {
      await tokensOf(storage).putActionTokens([token(1)]);
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          tokensOf(i % 2 ? peer : storage).settleActionToken(token(1).hash, `o${i}`),
        ),
      );
      expect(new Set(outcomes).size).toBe(1);
      expect(outcomes[0]).toMatch(/^o\d+$/);
      expect((await tokensOf(peer).getActionToken(token(1).hash))?.outcome).toBe(outcomes[0]);
    }));
}

function describeDurability(make: StorageFactory): void {
  test("action tokens - kept with their outcome across a close and a new instance (when the storage persists)", async () => {
    const under = unpack(await make());
    if (!under.reopen) {
      await under.cleanup?.();
      return;
    }
    const storage = defineStorage(under.storage as StorageImplementation);
    await storage.open();
    await tokensOf(storage).putActionTokens([token(1), token(2)]);
    await tokensOf(storage).settleActionToken(token(1).hash, "kept");
    await storage.close();
    const again = defineStorage(under.reopen() as StorageImplementation);
    await again.open();
    try {
      expect((await tokensOf(again).getActionToken(token(1).hash))?.outcome).toBe("kept");
      expect(await tokensOf(again).getActionToken(token(2).hash)).toEqual(token(2));
    } finally {
      await again.close();
      await under.cleanup?.();
    }
  });
}
