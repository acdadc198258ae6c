// The ScheduleStore conformance suite (docs/PROTOCOL.md §17.3), exported by "chat-gateway/testing".
import { beforeEach, describe, expect, test } from "vitest";
import { scheduleRunKey } from "chat-gateway/storage";
import type { ScheduleRecord, ScheduleRun, ScheduleStore } from "chat-gateway/storage";
import { eachTest } from "./under-test.js";

/** A schedule store under test: the store, optionally a second one on the same data, and the clean-up. */
export interface ScheduleStoreUnderTest {
  /** Ready to use: the suite opens nothing (open a storage that is also the store before returning it). */
  store: ScheduleStore;
  /** A second store on the same data, as another process would have; without it `store` itself. */
  peer?: ScheduleStore;
  /** Runs after the test (close the storage, drop a schema, remove a folder). */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the schedule store for one test: called before every test, it must return an empty store
 * (or a {@link ScheduleStoreUnderTest}) that shares no schedules with the ones it made before.
 */
export type ScheduleStoreFactory = () =>
  | ScheduleStore
  | ScheduleStoreUnderTest
  | Promise<ScheduleStore | ScheduleStoreUnderTest>;

const A = "alice";
const B = "bob";

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

const byId = (all: { schedule: ScheduleRecord }[]) =>
  [...all].sort((x, y) => x.schedule.schedule_id.localeCompare(y.schedule.schedule_id));

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link ScheduleStore}
 * contract (schedules, docs/PROTOCOL.md §17.3) for one implementation, inside a
 * `describe("schedule store conformance: <name>")` block:
 *
 * ```ts
 * import { describeScheduleStoreConformance } from "chat-gateway/testing";
 * describeScheduleStoreConformance("my store", () => myScheduleStore());
 * ```
 *
 * What it checks, for two owners:
 * - records: schedules are listed per owner and across owners (through the peer too) with their
 *   slot and latest run, and what was passed in or returned is a copy;
 * - names: a new schedule of a name replaces the old one; `deleteSchedule` is per owner, and a
 *   deleted schedule's slots are not claimed;
 * - slots: a slot is claimed once, an older one never after a newer;
 * - runs: a run is replaced only by a writer that read it as it is (`scheduleRunKey`);
 * - concurrency: of many claims of one slot at once, half through the peer, exactly one wins;
 *   of many writers ending one run at once, exactly one does.
 *
 * @param name Shown in the test names, e.g. `"postgres"`.
 * @param make Makes the store for one test; see {@link ScheduleStoreFactory}.
 */
export function describeScheduleStoreConformance(name: string, make: ScheduleStoreFactory): void {
  describe(`schedule store conformance: ${name}`, () => {
    const current = eachTest<"store", ScheduleStore>(
      "store",
      make,
      (made): made is ScheduleStore => "putSchedule" in made,
    );
    let store: ScheduleStore;
    let peer: ScheduleStore;
    beforeEach(() => {
      ({ value: store, peer } = current);
    });
    const use = () => ({ store, peer });
    describeRecords(use);
    describeSlotsAndRuns(use);
  });
}

type Use = () => { store: ScheduleStore; peer: ScheduleStore };

/** Schedules are listed per owner and across owners, replaced by name and deleted per owner. */
function describeRecords(use: Use): void {
  test("schedules - listed per owner and across owners, with their slot and run", async () => {
    const { store, peer } = use();
    const s2 = schedule("s2", {
      tz: "Europe/Berlin",
      last_slot: 7_000,
      last_run: run(7_000, "ok", { answer_id: "a1" }),
    });
    await store.putSchedule(A, schedule("s1"));
    await peer.putSchedule(B, s2);
    expect(await peer.listSchedules(A)).toEqual([schedule("s1")]);
    expect(await store.listSchedules(B)).toEqual([s2]);
    expect(await store.listSchedules("nobody")).toEqual([]);
    expect(byId(await peer.allSchedules())).toEqual([
      { owner: A, schedule: schedule("s1") },
      { owner: B, schedule: s2 },
    ]);
  });

  test("schedules - what was passed in or returned is a copy", async () => {
    const { store } = use();
    const given = schedule("s1");
    await store.putSchedule(A, given);
    given.prompt = "changed";
    (await store.listSchedules(A))[0]!.cron = "mutated";
    (await store.allSchedules())[0]!.schedule.name = "mutated";
    (await store.claimScheduleSlot("s1", 5_000))!.schedule.tz = "mutated";
    expect(await store.listSchedules(A)).toEqual([schedule("s1", { last_slot: 5_000 })]);
  });

  test("schedules - a new schedule of a name replaces the old one; deleteSchedule is per owner", async () => {
    const { store } = use();
    await store.putSchedule(A, schedule("s1", { name: "daily" }));
    await store.putSchedule(A, schedule("s9", { name: "daily", cron: "0 9 * * *" }));
    await store.putSchedule(B, schedule("s5", { name: "daily" }));
    expect(await store.listSchedules(A)).toEqual([schedule("s9", { name: "daily", cron: "0 9 * * *" })]);
    expect(await store.deleteSchedule(B, "s9")).toBe(false);
    expect(await store.deleteSchedule(A, "s9")).toBe(true);
    expect(await store.listSchedules(A)).toEqual([]);
    expect(await store.deleteSchedule(A, "s9")).toBe(false);
    expect(await store.claimScheduleSlot("s9", 5_000)).toBeUndefined();
    expect(await store.listSchedules(B)).toEqual([schedule("s5", { name: "daily" })]);
  });
}

/** Each slot is claimed once, also concurrently, and a run is replaced only by a writer that read it. */
function describeSlotsAndRuns(use: Use): void {
  test("slots - a slot is claimed once, an older one never after a newer", async () => {
    const { store, peer } = use();
    await store.putSchedule(A, schedule("s1"));
    expect(await store.claimScheduleSlot("s1", 5_000)).toEqual({
      owner: A,
      schedule: schedule("s1", { last_slot: 5_000 }),
    });
    expect(await peer.claimScheduleSlot("s1", 5_000)).toBeUndefined();
    expect(await store.claimScheduleSlot("s1", 4_000)).toBeUndefined();
    expect((await peer.claimScheduleSlot("s1", 6_000))?.schedule.last_slot).toBe(6_000);
    expect((await store.listSchedules(A))[0]!.last_slot).toBe(6_000);
  });

  test("runs - a run is replaced only by a writer that read it as it is", async () => {
    const { store, peer } = use();
    await store.putSchedule(A, schedule("s1"));
    expect(await store.recordScheduleRun("s1", run(5_000, "running"), "5000:running")).toBe(false);
    expect(await store.recordScheduleRun("s1", run(5_000, "running"), "")).toBe(true);
    expect(await peer.recordScheduleRun("s1", run(5_000, "running"), "")).toBe(false);
    const ended = run(5_000, "error", { answer_id: "a1", error: "why" });
    expect(await peer.recordScheduleRun("s1", ended, scheduleRunKey(run(5_000, "running")))).toBe(true);
    expect((await store.listSchedules(A))[0]!.last_run).toEqual(ended);
    expect(await store.recordScheduleRun("missing", run(1, "running"), "")).toBe(false);
  });

  test("concurrency - of concurrent claims of one slot, half through the peer, exactly one wins", async () => {
    const { store, peer } = use();
    await store.putSchedule(A, schedule("s1"));
    const claims = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? peer : store).claimScheduleSlot("s1", 9_000)),
    );
    expect(claims.filter((c) => c !== undefined)).toEqual([
      { owner: A, schedule: schedule("s1", { last_slot: 9_000 }) },
    ]);
  });

  test("concurrency - of writers ending one run at once, half through the peer, exactly one does", async () => {
    const { store, peer } = use();
    await store.putSchedule(A, schedule("s1", { last_slot: 5_000, last_run: run(5_000, "running") }));
    const ends = await Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        (n % 2 ? peer : store).recordScheduleRun(
          "s1",
          run(5_000, "ok", { answer_id: `a${n}` }),
          scheduleRunKey(run(5_000, "running")),
        ),
      ),
    );
    expect(ends.filter(Boolean)).toHaveLength(1);
    const winner = ends.indexOf(true);
    expect((await peer.listSchedules(A))[0]!.last_run).toEqual(run(5_000, "ok", { answer_id: `a${winner}` }));
  });
}
