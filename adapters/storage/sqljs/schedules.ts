/**
 * The {@link ScheduleStore} of the sql.js storage (docs/PROTOCOL.md §17): its journaled writes
 * and its reads. One process holds the database, and each write is one transaction, so a claim is
 * a conditional update.
 * @module
 */
import { scheduleRunKey } from "chat-gateway/storage";
import type { Owner } from "chat-gateway";
import type { OwnedSchedule, ScheduleRecord, ScheduleRun, ScheduleStore } from "chat-gateway/storage";
import type { Sql } from "./sql.js";

/** The journaled schedule writes. */
export type ScheduleOp =
  | { k: "sched"; o: Owner; s: ScheduleRecord }
  | { k: "unsched"; o: Owner; id: string }
  | { k: "slot"; id: string; slot: number }
  | { k: "run"; id: string; r: ScheduleRun; x: string };

/** Migration 8: schedules by id; the claimed slot and the latest run have columns of their own. */
export const SCHEDULES_MIGRATION = `
  CREATE TABLE schedules (
    schedule_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    last_slot INTEGER NOT NULL,
    run TEXT,
    UNIQUE (owner, name)
  ) WITHOUT ROWID;
`;

const COLUMNS = "owner, data, last_slot, run";

function record(row: readonly unknown[]): OwnedSchedule {
  const schedule = { ...(JSON.parse(row[1] as string) as ScheduleRecord), last_slot: row[2] as number };
  if (typeof row[3] === "string") schedule.last_run = JSON.parse(row[3]) as ScheduleRun;
  return { owner: row[0] as Owner, schedule };
}

function definition(schedule: ScheduleRecord): string {
  return JSON.stringify({ ...schedule, last_slot: undefined, last_run: undefined });
}

/** Applies one schedule op; the caller holds the transaction. */
export function applyScheduleOp(sql: Sql, op: ScheduleOp): OwnedSchedule | boolean | undefined {
  switch (op.k) {
    case "sched": {
      const { schedule_id: id, name, last_slot: slot, last_run: run } = op.s;
      sql.run("DELETE FROM schedules WHERE owner = ? AND name = ? AND schedule_id <> ?", [op.o, name, id]);
      sql.run(
        "INSERT OR REPLACE INTO schedules (schedule_id, owner, name, data, last_slot, run) VALUES (?, ?, ?, ?, ?, ?)",
        [id, op.o, name, definition(op.s), slot, run ? JSON.stringify(run) : null],
      );
      return undefined;
    }
    case "unsched": {
      const found = sql.get("SELECT 1 FROM schedules WHERE schedule_id = ? AND owner = ?", [op.id, op.o]);
      if (found) sql.run("DELETE FROM schedules WHERE schedule_id = ?", [op.id]);
      return found !== undefined;
    }
    case "slot": {
      const row = sql.get(`SELECT ${COLUMNS} FROM schedules WHERE schedule_id = ?`, [op.id]);
      if (!row || (row[2] as number) >= op.slot) return undefined;
      sql.run("UPDATE schedules SET last_slot = ? WHERE schedule_id = ?", [op.slot, op.id]);
      return record([row[0], row[1], op.slot, row[3]]);
    }
    case "run": {
      const row = sql.get("SELECT run FROM schedules WHERE schedule_id = ?", [op.id]);
      if (!row || scheduleRunKey(typeof row[0] === "string" ? (JSON.parse(row[0]) as ScheduleRun) : undefined) !== op.x)
        return false;
      sql.run("UPDATE schedules SET run = ? WHERE schedule_id = ?", [JSON.stringify(op.r), op.id]);
      return true;
    }
  }
}

/** The schedule reads, by name (part of the storage's reads). */
export const scheduleQueries = {
  listSchedules(sql: Sql, owner: Owner): ScheduleRecord[] {
    return sql.all(`SELECT ${COLUMNS} FROM schedules WHERE owner = ?`, [owner]).map((r) => record(r).schedule);
  },
  allSchedules(sql: Sql): OwnedSchedule[] {
    return sql.all(`SELECT ${COLUMNS} FROM schedules`, []).map(record);
  },
};

/** The schedule store as the storage offers it, over the storage's read and journaled write. */
export function sqlJsSchedules(
  read: (name: keyof typeof scheduleQueries, ...args: unknown[]) => Promise<unknown>,
  write: (op: ScheduleOp) => Promise<unknown>,
): ScheduleStore {
  return {
    listSchedules: (owner) => read("listSchedules", owner) as Promise<ScheduleRecord[]>,
    allSchedules: () => read("allSchedules") as Promise<OwnedSchedule[]>,
    async putSchedule(owner, schedule) {
      await write({ k: "sched", o: owner, s: schedule });
    },
    deleteSchedule: (owner, scheduleId) => write({ k: "unsched", o: owner, id: scheduleId }) as Promise<boolean>,
    claimScheduleSlot: (scheduleId, slot) =>
      write({ k: "slot", id: scheduleId, slot }) as Promise<OwnedSchedule | undefined>,
    recordScheduleRun: (scheduleId, run, expected) =>
      write({ k: "run", id: scheduleId, r: run, x: expected }) as Promise<boolean>,
  };
}
