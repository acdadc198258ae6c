/**
 * The {@link ScheduleStore} of the PostgreSQL storage (docs/PROTOCOL.md §17): each slot is
 * claimed by one conditional `UPDATE`, so exactly one process of all that share the database
 * runs it; the latest run is replaced only by a writer that read it as it is (`run_key`).
 * @module
 */
import { scheduleRunKey } from "chat-gateway/storage";
import type { OwnedSchedule, ScheduleRecord, ScheduleRun, ScheduleStore } from "chat-gateway/storage";
import type { Database } from "./database.js";

interface Row {
  owner: string;
  data: string;
  last_slot: string;
  run: string | null;
}

function owned(row: Row): OwnedSchedule {
  const schedule: ScheduleRecord = { ...(JSON.parse(row.data) as ScheduleRecord), last_slot: Number(row.last_slot) };
  if (row.run !== null) schedule.last_run = JSON.parse(row.run) as ScheduleRun;
  return { owner: row.owner, schedule };
}

const COLUMNS = "owner, data, last_slot, run";

/** The six schedule members on the `schedules` table (migration 12). */
export function postgresSchedules(db: Database): ScheduleStore {
  const { s, rows } = db;
  return {
    async putSchedule(owner, schedule) {
      const { last_slot: slot, last_run: run, ...rest } = schedule;
      await db.transaction(async (client) => {
        // A new schedule of a name replaces the old one.
        await client.query(`DELETE FROM ${s}.schedules WHERE owner = $1 AND name = $2 AND schedule_id <> $3`, [
          owner,
          schedule.name,
          schedule.schedule_id,
        ]);
        await client.query(
          `INSERT INTO ${s}.schedules (schedule_id, owner, name, data, last_slot, run, run_key) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (schedule_id) DO UPDATE SET owner = EXCLUDED.owner, name = EXCLUDED.name, data = EXCLUDED.data, last_slot = EXCLUDED.last_slot, run = EXCLUDED.run, run_key = EXCLUDED.run_key`,
          [
            schedule.schedule_id,
            owner,
            schedule.name,
            JSON.stringify(rest),
            slot,
            run ? JSON.stringify(run) : null,
            scheduleRunKey(run),
          ],
        );
      });
    },
    async listSchedules(owner) {
      return (await rows<Row>(`SELECT ${COLUMNS} FROM ${s}.schedules WHERE owner = $1`, [owner])).map(
        (r) => owned(r).schedule,
      );
    },
    async allSchedules() {
      return (await rows<Row>(`SELECT ${COLUMNS} FROM ${s}.schedules`, [])).map(owned);
    },
    async deleteSchedule(owner, scheduleId) {
      return (
        (
          await rows(`DELETE FROM ${s}.schedules WHERE owner = $1 AND schedule_id = $2 RETURNING schedule_id`, [
            owner,
            scheduleId,
          ])
        ).length > 0
      );
    },
    async claimScheduleSlot(scheduleId, slot) {
      // The row lock of the UPDATE makes a second claimer wait, then see the new last_slot and match nothing.
      const [row] = await rows<Row>(
        `UPDATE ${s}.schedules SET last_slot = $2 WHERE schedule_id = $1 AND last_slot < $2 RETURNING ${COLUMNS}`,
        [scheduleId, slot],
      );
      return row && owned(row);
    },
    async recordScheduleRun(scheduleId, run, expected) {
      const written = await rows(
        `UPDATE ${s}.schedules SET run = $2, run_key = $3 WHERE schedule_id = $1 AND run_key = $4 RETURNING schedule_id`,
        [scheduleId, JSON.stringify(run), scheduleRunKey(run), expected],
      );
      return written.length > 0;
    },
  };
}
