/**
 * Conformance of the `schedules` capability (docs/PROTOCOL.md §17): schedules by id across
 * owners, a name replacing its schedule, each slot claimed once (also concurrently), a run
 * replaced only by a writer that read it as it is; and adoption moving hooks and schedules with
 * their channels. Part of {@link describeStorageConformance}.
 * @module
 */
import { describe, expect, test } from "vitest";
import { scheduleRunKey } from "chat-gateway/storage";
import type { ScheduleRecord, ScheduleRun, Storage, StorageCapabilities } from "chat-gateway";
import { A, B, capabilityLabel, channel } from "./storage-records.js";

function schedule(id: string, overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    schedule_id: id,
    name: id,
    chat_id: "c1",
    cron: "*/5 * * * *",
    tz: "UTC",
    prompt: `prompt ${id}`,
    created_at: 1_000,
    last_slot: 0,
    ...overrides,
  };
}

function run(slot: number, status: ScheduleRun["status"], extra: Partial<ScheduleRun> = {}): ScheduleRun {
  return { slot, status, prompt_id: `p${slot}`, at: slot + 1, ...extra };
}

/** Declares the schedule tests; `current` gives the storage of the running test. */
export function describeSchedulesConformance(current: () => Storage, capabilities: StorageCapabilities): void {
  if (!capabilities.schedules) {
    describe(capabilityLabel("schedules", false), () => {
      test("schedules - none are kept: putSchedule rejects unsupported and nothing is found or claimed", async () => {
        const storage = current();
        await expect(storage.putSchedule(A, schedule("s1"))).rejects.toMatchObject({ code: "unsupported" });
        expect(await storage.listSchedules(A)).toEqual([]);
        expect(await storage.allSchedules()).toEqual([]);
        expect(await storage.claimScheduleSlot("s1", 5_000)).toBeUndefined();
      });
    });
    return;
  }

  describe(capabilityLabel("schedules", true), () => {
    describeScheduleRecords(current);
    describeScheduleSlots(current);
  });

  if (capabilities.adoptOwner && capabilities.hooks) describeAutomationAdoption(current);
}

/** Schedules are listed per owner and across owners, replaced by name and deleted per owner. */
function describeScheduleRecords(current: () => Storage): void {
  test("schedules - listed per owner and across owners, with their slot and run", async () => {
    const storage = current();
    await storage.putSchedule(A, schedule("s1"));
    await storage.putSchedule(
      B,
      schedule("s2", { tz: "Europe/Berlin", last_slot: 7_000, last_run: run(7_000, "ok", { answer_id: "a1" }) }),
    );
    expect(await storage.listSchedules(A)).toEqual([schedule("s1")]);
    expect(await storage.listSchedules(B)).toEqual([
      schedule("s2", { tz: "Europe/Berlin", last_slot: 7_000, last_run: run(7_000, "ok", { answer_id: "a1" }) }),
    ]);
    const all = (await storage.allSchedules()).sort((x, y) =>
      x.schedule.schedule_id.localeCompare(y.schedule.schedule_id),
    );
    expect(all.map((o) => [o.owner, o.schedule.schedule_id])).toEqual([
      [A, "s1"],
      [B, "s2"],
    ]);
  });

  test("schedules - a new schedule of a name replaces the old one; deleteSchedule is per owner", async () => {
    const storage = current();
    await storage.putSchedule(A, schedule("s1", { name: "daily" }));
    await storage.putSchedule(A, schedule("s9", { name: "daily", cron: "0 9 * * *" }));
    expect(await storage.listSchedules(A)).toEqual([schedule("s9", { name: "daily", cron: "0 9 * * *" })]);
    expect(await storage.deleteSchedule(B, "s9")).toBe(false);
    expect(await storage.deleteSchedule(A, "s9")).toBe(true);
    expect(await storage.listSchedules(A)).toEqual([]);
    expect(await storage.deleteSchedule(A, "s9")).toBe(false);
    expect(await storage.claimScheduleSlot("s9", 5_000)).toBeUndefined();
  });
}

/** Each slot is claimed once, also concurrently, and a run is replaced only by a writer that read it. */
function describeScheduleSlots(current: () => Storage): void {
  test("schedules - a slot is claimed once, an older one never after a newer", async () => {
    const storage = current();
    await storage.putSchedule(A, schedule("s1"));
    expect(await storage.claimScheduleSlot("s1", 5_000)).toEqual({
      owner: A,
      schedule: schedule("s1", { last_slot: 5_000 }),
    });
    expect(await storage.claimScheduleSlot("s1", 5_000)).toBeUndefined();
    expect(await storage.claimScheduleSlot("s1", 4_000)).toBeUndefined();
    expect((await storage.claimScheduleSlot("s1", 6_000))?.schedule.last_slot).toBe(6_000);
    expect((await storage.listSchedules(A))[0]!.last_slot).toBe(6_000);
  });

  test("schedules - of concurrent claims of one slot exactly one wins", async () => {
    const storage = current();
    await storage.putSchedule(A, schedule("s1"));
    const claims = await Promise.all(Array.from({ length: 8 }, () => storage.claimScheduleSlot("s1", 9_000)));
    expect(claims.filter((c) => c !== undefined)).toHaveLength(1);
  });

  test("schedules - a run is replaced only by a writer that read it as it is, once", async () => {
    const storage = current();
    await storage.putSchedule(A, schedule("s1"));
    expect(await storage.recordScheduleRun("s1", run(5_000, "running"), "5000:running")).toBe(false);
    expect(await storage.recordScheduleRun("s1", run(5_000, "running"), "")).toBe(true);
    const ends = await Promise.all(
      [1, 2, 3].map((n) =>
        storage.recordScheduleRun(
          "s1",
          run(5_000, "ok", { answer_id: `a${n}` }),
          scheduleRunKey(run(5_000, "running")),
        ),
      ),
    );
    expect(ends.filter(Boolean)).toHaveLength(1);
    const stored = (await storage.listSchedules(A))[0]!.last_run!;
    expect(stored.status).toBe("ok");
    expect(await storage.recordScheduleRun("missing", run(1, "running"), "")).toBe(false);
  });
}

/** Adoption moves hooks and schedules with the channels they post into. */
function describeAutomationAdoption(current: () => Storage): void {
  describe(capabilityLabel("adoptOwner", true), () => {
    test("adoptOwner - hooks and schedules move with the channels they post into", async () => {
      const storage = current();
      await storage.commit(A, { channels: [channel("c1", { automation: true })] });
      await storage.putHook(A, { hook_id: "h1", name: "ci", chat_id: "c1", mode: "post", secret: "s", created_at: 1 });
      await storage.putSchedule(A, schedule("s1"));
      await storage.adoptOwner(A, B);
      expect((await storage.listHooks(B)).map((h) => h.hook_id)).toEqual(["h1"]);
      expect(await storage.listHooks(A)).toEqual([]);
      expect((await storage.getHook("h1"))?.owner).toBe(B);
      expect(await storage.listSchedules(B)).toEqual([schedule("s1")]);
      expect(await storage.listSchedules(A)).toEqual([]);
      expect((await storage.claimScheduleSlot("s1", 5_000))?.owner).toBe(B);
    });
  });
}
