/**
 * The `ScheduleStore` contract: where schedules (docs/PROTOCOL.md §17.3) are kept, and how one
 * slot of a schedule is claimed by exactly one process. Its own contract, apart from the chat data
 * of `Storage`: pass one as `createGateway({ scheduleStore })`. The memory, sql.js and PostgreSQL
 * storages are one too, on the same database (`scheduleStore: storage`);
 * `describeScheduleStoreConformance` from `chat-gateway/testing` checks one of your own.
 * @module
 */
import type { ChatId, MessageId, Owner } from "../protocol/ids.js";

/** How a schedule's run ended, or that it still goes. */
export type ScheduleRunStatus = "running" | "ok" | "error";

/** One run of a schedule: the slot it ran for and what became of it. */
export interface ScheduleRun {
  /** The slot, unix milliseconds (for `schedule run NAME`, the moment it was asked). */
  slot: number;
  status: ScheduleRunStatus;
  /** The stored prompt (a user message of the schedule's channel) the run's turn answers. */
  prompt_id: MessageId;
  /** The stored answer, once there is one (also an answer stored with `status: "error"`). */
  answer_id?: MessageId;
  /** Why the run failed, with `status: "error"`. */
  error?: string;
  /** When this status was recorded, unix milliseconds. */
  at: number;
}

/** One schedule of an owner: a prompt run as a turn in an automation channel at each cron slot. */
export interface ScheduleRecord {
  /** Random; the key of every storage call about the schedule. */
  schedule_id: string;
  /** The owner's name for it, unique per owner. */
  name: string;
  chat_id: ChatId;
  /** 5 fields, or 6 with seconds first. */
  cron: string;
  /** IANA time zone name the cron is read in. */
  tz: string;
  prompt: string;
  /** Unix milliseconds; slots at or before it never run. */
  created_at: number;
  /** The newest slot claimed by a process (unix ms), 0 when none was. Moved only by {@link ScheduleStore.claimScheduleSlot}. */
  last_slot: number;
  /** The latest run, if any. Moved only by {@link ScheduleStore.recordScheduleRun}. */
  last_run?: ScheduleRun;
}

/** A schedule with the owner it belongs to (what the scheduler reads across owners). */
export interface OwnedSchedule {
  owner: Owner;
  schedule: ScheduleRecord;
}

/**
 * The compare key of {@link ScheduleStore.recordScheduleRun}: a run is replaced only by
 * a writer that read it as it is (same slot, same status); `""` for no run.
 */
export function scheduleRunKey(run: ScheduleRun | undefined | null): string {
  return run ? `${run.slot}:${run.status}` : "";
}

/**
 * Keeps the owners' schedules. `gateway.schedules` manages them here; the scheduler of every
 * gateway started with the `scheduler` option reads them all once a tick and claims each slot
 * that came due.
 *
 * Rules for every member:
 * - **Owners.** Schedule ids are unique across owners; every member that takes an `owner` never
 *   returns, changes or counts another owner's schedule.
 * - **Copies.** What goes in and comes out is the caller's: mutating it later never changes what
 *   is stored.
 * - **Concurrency.** Every member may be called concurrently, also by several processes sharing
 *   the store; each is atomic on its own. {@link ScheduleStore.claimScheduleSlot} and
 *   {@link ScheduleStore.recordScheduleRun} are compare-and-set steps: of concurrent calls for
 *   one slot or one run, in any processes, exactly one wins. They are what makes each slot run
 *   once and each run end once.
 * - **Durability.** A write is durable when it resolves.
 * - **Adoption.** As for hooks: a store kept in the same database as the storage should move the
 *   owner's schedules in the storage's `adoptOwner` step (docs/PROTOCOL.md §10.4), since they post
 *   into the channels that move (the built-in storages do).
 */
export interface ScheduleStore {
  /**
   * Insert or replace a schedule by `schedule_id`, and by `name` within the owner (a new schedule
   * of the same name replaces the old one), `last_slot` and `last_run` as given.
   */
  putSchedule(owner: Owner, schedule: ScheduleRecord): Promise<void>;
  /** Every schedule of the owner, in any order. */
  listSchedules(owner: Owner): Promise<ScheduleRecord[]>;
  /**
   * Every schedule of every owner, in any order. The scheduler of each process reads it once a
   * tick (default every second), so keep it one indexed read.
   */
  allSchedules(): Promise<OwnedSchedule[]>;
  /** Forget a schedule; false when the owner has no such schedule. */
  deleteSchedule(owner: Owner, scheduleId: string): Promise<boolean>;
  /**
   * Claim a slot (unix ms) of a schedule for this process. Atomically across every process
   * sharing the store, it sets `last_slot` to `slot` only when the stored `last_slot` is smaller,
   * and then resolves the schedule as it now is; otherwise (the slot or a newer one was claimed
   * already, or the schedule is gone) it changes nothing and resolves undefined.
   */
  claimScheduleSlot(scheduleId: string, slot: number): Promise<OwnedSchedule | undefined>;
  /**
   * Set `last_run` to `run`, atomically only when the stored `last_run` still has the key
   * `expected` ({@link scheduleRunKey} of the run as the caller read it: the same slot and status;
   * `""` for none). Resolves whether it wrote; false for an unknown schedule. Two processes that
   * both see a run end settle it once: the one that wins raises the run's notification.
   */
  recordScheduleRun(scheduleId: string, run: ScheduleRun, expected: string): Promise<boolean>;
}
