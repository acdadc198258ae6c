/**
 * Adoption of a storage that is also the gateway's `HookStore` and `ScheduleStore`, as the
 * built-in ones are: `adoptOwner` moves the owner's hooks and schedules with the channels they post
 * into (docs/PROTOCOL.md §10.4). Part of {@link describeStorageConformance}; the stores' own
 * guarantees are checked by `describeHookStoreConformance` and `describeScheduleStoreConformance`.
 * @module
 */
import { describe, expect, test } from "vitest";
import type { HookStore, ScheduleRecord, ScheduleStore, Storage } from "chat-gateway/storage";
import { A, B, channel } from "./storage-records.js";

/** A storage implementation that is also a hook store and a schedule store. */
export type AutomationStorage = HookStore & ScheduleStore;

/** Whether what a storage factory made also implements both stores. */
export function isAutomationStorage(made: object): made is AutomationStorage {
  const members = ["putHook", "getHook", "listHooks", "putSchedule", "listSchedules", "claimScheduleSlot"];
  return members.every((name) => typeof (made as Record<string, unknown>)[name] === "function");
}

const SCHEDULE: ScheduleRecord = {
  schedule_id: "s1",
  name: "daily",
  chat_id: "c1",
  cron: "*/5 * * * *",
  tz: "UTC",
  prompt: "report",
  created_at: 1_000,
  last_slot: 0,
};

/** Declares the adoption test; `current` gives the storage of the running test and its stores. */
export function describeAutomationAdoption(current: () => { storage: Storage; stores: AutomationStorage }): void {
  describe("adoptOwner (capability, also the hook and schedule store)", () => {
    test("adoptOwner - hooks and schedules move with the channels they post into", async () => {
      const { storage, stores } = current();
      await storage.commit(A, { channels: [channel("c1", { automation: true })] });
      await stores.putHook(A, { hook_id: "h1", name: "ci", chat_id: "c1", mode: "post", secret: "s", created_at: 1 });
      await stores.putSchedule(A, SCHEDULE);
      await storage.adoptOwner(A, B);
      expect((await stores.listHooks(B)).map((h) => h.hook_id)).toEqual(["h1"]);
      expect(await stores.listHooks(A)).toEqual([]);
      expect((await stores.getHook("h1"))?.owner).toBe(B);
      expect(await stores.listSchedules(B)).toEqual([SCHEDULE]);
      expect(await stores.listSchedules(A)).toEqual([]);
      expect((await stores.claimScheduleSlot("s1", 5_000))?.owner).toBe(B);
    });
  });
}
