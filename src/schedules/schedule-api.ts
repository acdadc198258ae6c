/**
 * Managing an owner's schedules (`gateway.schedules`, docs/PROTOCOL.md §17): what the example
 * server's `schedule` commands and an embedder's own admin call. The schedules are kept by the
 * gateway's `scheduleStore`; a gateway started with the `scheduler` option runs them.
 * @module
 */
import { randomBytes } from "node:crypto";
import { GatewayError } from "../protocol/errors.js";
import type { ChatId, Owner } from "../protocol/ids.js";
import type { Channel } from "../contracts/records.js";
import { createChannel } from "../channels/channel-operations.js";
import type { ScheduleRecord, ScheduleRun, ScheduleStore } from "../contracts/schedules.js";
import { scheduleRunKey } from "../contracts/schedules.js";
import type { MessageServices } from "../requests/message-requests.js";
import { MAX_PROMPT_CHARS } from "../lanes/posts.js";
import { checkTimeZone, cronOf, nextSlot } from "./cron.js";
import type { Scheduler } from "./scheduler.js";

/** What {@link ScheduleApi.add} takes. */
export interface ScheduleInput {
  /** 1 to 64 letters, digits, `.`, `_` or `-`; unique per owner (a schedule of that name is replaced). */
  name: string;
  /** 5 fields (minute hour day month weekday), or 6 with seconds first. */
  cron: string;
  /** IANA time zone the cron is read in. Default `"UTC"`. */
  tz?: string;
  /** An automation channel of the owner, where the prompt and its answer land (or give `channel`). */
  chat_id?: ChatId;
  /**
   * Instead of `chat_id`: the name of the owner's automation channel, created as one when the owner
   * has no channel of that name (after every other field was checked, so a refusal makes nothing).
   */
  channel?: string;
  /** The prompt each run sends the agent, 1 to 16,000 characters. */
  prompt: string;
}

/** A schedule as listed: its record, and its next slot (unix ms; null when the cron has none left). */
export type ScheduleInfo = ScheduleRecord & { next_run: number | null };

/** Server-side schedule management (`gateway.schedules`). */
export interface ScheduleApi {
  /**
   * Add (or replace, by name) a schedule. Its first slot is the first after now.
   * @throws {GatewayError} `unsupported` for a bad name, cron, time zone or prompt, a channel that is
   * not an automation channel, or a gateway without a `scheduleStore`; `not_found` for an
   * unknown channel
   */
  add(owner: Owner, input: ScheduleInput): Promise<ScheduleInfo>;
  /** The owner's schedules by name, each with its next slot and latest run. */
  list(owner: Owner): Promise<ScheduleInfo[]>;
  /**
   * Remove a schedule; a run that still goes ends as it would.
   * @throws {GatewayError} `not_found` when the owner has no schedule of that name
   */
  remove(owner: Owner, name: string): Promise<void>;
  /**
   * Run a schedule now, outside its cron; resolves with the run once its prompt is stored (the
   * answer follows in the channel, with its notification).
   * @throws {GatewayError} `not_found` for an unknown name; `unsupported` while the previous run still goes
   */
  run(owner: Owner, name: string): Promise<ScheduleRun>;
}

const noScheduleStore = () =>
  new GatewayError(
    "unsupported",
    "this gateway keeps no schedules: give createGateway a scheduleStore (the built-in storages are one)",
  );

/** A gateway without a `scheduleStore`: it keeps no schedules, so none is found and `add` is refused. */
export const NO_SCHEDULES: ScheduleStore = {
  putSchedule: async () => {
    throw noScheduleStore();
  },
  listSchedules: async () => [],
  allSchedules: async () => [],
  deleteSchedule: async () => false,
  claimScheduleSlot: async () => undefined,
  recordScheduleRun: async () => false,
};

function checkName(name: unknown): string {
  if (typeof name !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(name))
    throw new GatewayError("unsupported", "a schedule name is 1 to 64 letters, digits, '.', '_' or '-'");
  return name;
}

/** The channel `chat_id` names, or the channel named `channel` (made as an automation channel when there is none). */
async function targetChannel(services: MessageServices, owner: Owner, input: ScheduleInput): Promise<Channel> {
  if (typeof input.channel === "string") {
    const name = input.channel.trim();
    const found = (await services.storage.listChannels(owner)).find((c) => c.kind === "channel" && c.name === name);
    return found ?? (await createChannel(services, owner, { name, kind: "channel", automation: true }));
  }
  const channel =
    typeof input.chat_id === "string" ? await services.storage.getChannel(owner, input.chat_id) : undefined;
  if (!channel || channel.kind === "thread")
    throw new GatewayError("not_found", `unknown chat_id "${String(input.chat_id)}"`);
  return channel;
}

function info(schedule: ScheduleRecord, now: number): ScheduleInfo {
  return { ...schedule, next_run: nextSlot(schedule.cron, schedule.tz, now) };
}

/** The schedule API over a gateway's services, its schedule store and its scheduler. */
export function scheduleApi(services: MessageServices, store: ScheduleStore, scheduler: Scheduler): ScheduleApi {
  const find = async (owner: Owner, name: string): Promise<ScheduleRecord> => {
    const found = (await store.listSchedules(owner)).find((s) => s.name === name);
    if (!found) throw new GatewayError("not_found", `no schedule named "${name}"`);
    return found;
  };
  return {
    async add(owner, input) {
      // Refused before a channel is made for it: without a store nothing may change.
      if (store === NO_SCHEDULES) throw noScheduleStore();
      const name = checkName(input?.name);
      const tz = checkTimeZone(input.tz ?? "UTC");
      cronOf(input.cron, tz);
      const prompt = input.prompt;
      if (typeof prompt !== "string" || prompt.trim() === "" || prompt.length > MAX_PROMPT_CHARS)
        throw new GatewayError("unsupported", `a schedule's prompt is 1 to ${MAX_PROMPT_CHARS} characters`);
      const channel = await targetChannel(services, owner, input);
      if (!channel.automation)
        throw new GatewayError(
          "unsupported",
          `channel "${channel.name}" is not an automation channel: schedules post into automation channels only`,
        );
      const now = services.now();
      const schedule: ScheduleRecord = {
        schedule_id: `sc_${randomBytes(12).toString("hex")}`,
        name,
        chat_id: channel.chat_id,
        cron: input.cron.trim(),
        tz,
        prompt,
        created_at: now,
        last_slot: 0,
      };
      await store.putSchedule(owner, schedule);
      return info(schedule, now);
    },
    async list(owner) {
      const now = services.now();
      return (await store.listSchedules(owner))
        .map((s) => info(s, now))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async remove(owner, name) {
      await store.deleteSchedule(owner, (await find(owner, name)).schedule_id);
    },
    async run(owner, name) {
      const schedule = await find(owner, name);
      const busy = () => new GatewayError("unsupported", `schedule "${name}": the previous run still goes`);
      if (schedule.last_run?.status === "running") await scheduler.reconcile(owner, schedule, schedule.last_run);
      const current = (await find(owner, name)).last_run;
      if (current?.status === "running") throw busy();
      // Claimed like a slot: the cron's slots up to now are then taken too, so none runs twice.
      const claimed = await store.claimScheduleSlot(
        schedule.schedule_id,
        Math.max(services.now(), schedule.last_slot + 1),
      );
      if (!claimed) throw busy();
      const run = await scheduler.begin(owner, claimed.schedule, claimed.schedule.last_slot, scheduleRunKey(current));
      if (!run) throw busy();
      return run;
    },
  };
}
