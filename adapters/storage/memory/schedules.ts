/**
 * The {@link ScheduleStore} of the memory storage (docs/PROTOCOL.md §17): schedules by id, each
 * slot claimed once (one process shares this map, so a claim is a compare on it).
 * @module
 */
import { scheduleRunKey } from "chat-gateway/storage";
import type { Owner } from "chat-gateway";
import type { OwnedSchedule, ScheduleRecord, ScheduleStore } from "chat-gateway/storage";

/** The schedule store over a map of this process, and the move of adoption. */
export function memorySchedules(): { members: ScheduleStore; moveOwner(from: Owner, to: Owner): void } {
  const schedules = new Map<string, OwnedSchedule>();
  const members: ScheduleStore = {
    async putSchedule(owner: Owner, schedule: ScheduleRecord) {
      for (const [id, held] of schedules)
        if (held.owner === owner && held.schedule.name === schedule.name && id !== schedule.schedule_id)
          schedules.delete(id);
      schedules.set(schedule.schedule_id, { owner, schedule: structuredClone(schedule) });
    },
    async listSchedules(owner: Owner) {
      return [...schedules.values()].filter((s) => s.owner === owner).map((s) => structuredClone(s.schedule));
    },
    async allSchedules() {
      return structuredClone([...schedules.values()]);
    },
    async deleteSchedule(owner: Owner, scheduleId: string) {
      if (schedules.get(scheduleId)?.owner !== owner) return false;
      schedules.delete(scheduleId);
      return true;
    },
    async claimScheduleSlot(scheduleId: string, slot: number) {
      const held = schedules.get(scheduleId);
      if (!held || held.schedule.last_slot >= slot) return undefined;
      held.schedule.last_slot = slot;
      return structuredClone(held);
    },
    async recordScheduleRun(scheduleId, run, expected) {
      const held = schedules.get(scheduleId);
      if (!held || scheduleRunKey(held.schedule.last_run) !== expected) return false;
      held.schedule.last_run = structuredClone(run);
      return true;
    },
  };
  return {
    members,
    moveOwner(from, to) {
      for (const held of schedules.values()) if (held.owner === from) held.owner = to;
    },
  };
}
