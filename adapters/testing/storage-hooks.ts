/**
 * Conformance of the `hooks` capability (docs/PROTOCOL.md §17): hooks by id across owners, a name
 * replacing its hook, and delivery keys taken once until they expire. Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { HookRecord, Storage } from "chat-gateway";
import { A, B, capabilityLabel } from "./storage-records.js";

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

/** Declares the hook tests; `current` gives the storage of the running test. */
export function describeHooksConformance(current: () => Storage, declared: boolean): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  if (!declared) {
    describe(capabilityLabel("hooks", false), () => {
      test("hooks - none are kept: putHook rejects unsupported and nothing is found", async () => {
        await expect(storage.putHook(A, hook("h1"))).rejects.toMatchObject({ code: "unsupported" });
        expect(await storage.getHook("h1")).toBeUndefined();
        expect(await storage.listHooks(A)).toEqual([]);
      });
    });
    return;
  }

  describe(capabilityLabel("hooks", true), () => {
    test("hooks - found by id with their owner, listed per owner, secret kept as given", async () => {
      await storage.putHook(A, hook("h1"));
      await storage.putHook(B, hook("h2", { mode: "turn" }));
      expect(await storage.getHook("h1")).toEqual({ owner: A, hook: hook("h1") });
      expect(await storage.getHook("h2")).toEqual({ owner: B, hook: hook("h2", { mode: "turn" }) });
      expect(await storage.getHook("h3")).toBeUndefined();
      expect(await storage.listHooks(A)).toEqual([hook("h1")]);
      expect(await storage.listHooks(B)).toEqual([hook("h2", { mode: "turn" })]);
    });

    test("hooks - a new hook of a name replaces the old one; deleteHook is per owner", async () => {
      await storage.putHook(A, hook("h1", { name: "ci" }));
      await storage.putHook(A, hook("h9", { name: "ci", secret: "rotated" }));
      expect(await storage.getHook("h1")).toBeUndefined();
      expect(await storage.listHooks(A)).toEqual([hook("h9", { name: "ci", secret: "rotated" })]);
      expect(await storage.deleteHook(B, "h9")).toBe(false);
      expect(await storage.deleteHook(A, "h9")).toBe(true);
      expect(await storage.getHook("h9")).toBeUndefined();
      expect(await storage.deleteHook(A, "h9")).toBe(false);
    });

    test("hooks - a key is taken once until it expires, answers its message_id, and can be given up", async () => {
      await storage.putHook(A, hook("h1"));
      await storage.putHook(A, hook("h2"));
      expect(await storage.claimHookKey("h1", "k", 2_000, 1_000)).toEqual({ claimed: true });
      expect(await storage.claimHookKey("h1", "k", 2_000, 1_500)).toEqual({ claimed: false });
      expect(await storage.claimHookKey("h2", "k", 2_000, 1_500)).toEqual({ claimed: true });
      await storage.settleHookKey("h1", "k", "m1");
      expect(await storage.claimHookKey("h1", "k", 2_000, 1_600)).toEqual({ claimed: false, message_id: "m1" });
      expect(await storage.claimHookKey("h1", "k", 9_000, 2_000)).toEqual({ claimed: true });
      await storage.settleHookKey("h1", "k", null);
      expect(await storage.claimHookKey("h1", "k", 9_000, 2_100)).toEqual({ claimed: true });
    });

    test("hooks - of concurrent claims of one key exactly one wins", async () => {
      await storage.putHook(A, hook("h1"));
      const claims = await Promise.all(
        Array.from({ length: 8 }, () => storage.claimHookKey("h1", "same", 5_000, 1_000)),
      );
      expect(claims.filter((c) => c.claimed)).toHaveLength(1);
    });
  });
}
