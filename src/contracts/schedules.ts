/**
 * The records of schedules (docs/PROTOCOL.md §17): what a storage with the `schedules`
 * capability keeps, and how one slot of a schedule is claimed by exactly one process.
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
  /** The newest slot claimed by a process (unix ms), 0 when none was. Moved only by the storage's `claimScheduleSlot`. */
  last_slot: number;
  /** The latest run, if any. Moved only by the storage's `recordScheduleRun`. */
  last_run?: ScheduleRun;
}

/** A schedule with the owner it belongs to (what the scheduler reads across owners). */
export interface OwnedSchedule {
  owner: Owner;
  schedule: ScheduleRecord;
}

/**
 * The compare key of the storage's `recordScheduleRun`: a run is replaced only by
 * a writer that read it as it is (same slot, same status); `""` for no run.
 */
export function scheduleRunKey(run: ScheduleRun | undefined | null): string {
  return run ? `${run.slot}:${run.status}` : "";
}
