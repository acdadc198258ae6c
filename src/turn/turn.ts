/**
 * One assistant answer, from the first event to the stored final frame: typing on and off,
 * streamed or whole, tool progress, commentary, media, the runtime footer, checkpoints, stop,
 * timeout, limits and failure. Used for agent turns, slash commands and server-side posts alike.
 * @module
 */
import { createHash } from "node:crypto";
import type { TurnServices } from "./turn-services.js";
import { newId } from "../id-generator.js";
import type { MessageId, Owner } from "../ids.js";
import type { LaneTurn } from "./lanes.js";
import type { MediaRecord, MediaRef, MessageStatus, StoredMessage } from "../contracts/records.js";
import { messagePayload, stopPayload } from "../protocol/message-payloads.js";
import { bareModelId, buildRuntimeInfo, mergeUsage } from "./runtime-info.js";
import { AnswerLimits } from "./turn-limits.js";
import type { MediaEvent, RuntimeEvent, UsageEvent } from "../contracts/runtime.js";
import type { ServerFrame, StoredFrame } from "../protocol/protocol.js";
import type { Lane } from "../contracts/storage.js";

/** What an answer needs. */
export interface AnswerParams {
  owner: Owner;
  lane: Lane;
  /** The user message this answers. */
  replyTo?: MessageId;
  /** The events of the answer. Called once, with the turn's abort signal. */
  events(signal: AbortSignal): AsyncIterable<RuntimeEvent>;
  /** The lane slot it runs in (for stop and timeout). */
  turn: LaneTurn;
  /** Server-side posts and command replies push like answers; false to skip push. */
  push?: boolean;
  /** The model known before the answer starts (the runtime's `model`); a usage event's model replaces it. */
  model?: string;
}

const STATUS_NOTE: Partial<Record<MessageStatus, string>> = {
  stopped: "(stopped)",
  interrupted: "(interrupted: the gateway restarted)",
};

function previewOf(args: Record<string, unknown>): string {
  let text: string;
  try {
    text = JSON.stringify(args) ?? "";
  } catch {
    text = "";
  }
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : typeof error === "string" ? error : "";
  const clean = message.replace(/\s+/g, " ").trim().slice(0, 500);
  return clean ? `The agent failed: ${clean}` : "The agent failed unexpectedly.";
}

/**
 * Copy what the runtime reported of its model and token count onto the message (the footer
 * rule: streaming frames and history carry them). True when something changed.
 */
function noteUsage(message: StoredMessage, usage: Omit<UsageEvent, "type">): boolean {
  const { model, tokens } = message;
  if (usage.model) message.model = bareModelId(usage.model) || message.model;
  if (usage.totalTokens !== undefined) message.tokens = usage.totalTokens;
  else if (usage.promptTokens !== undefined || usage.completionTokens !== undefined) {
    message.tokens = (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0);
  }
  return message.model !== model || message.tokens !== tokens;
}

/** `model` and `tokens` of a live frame, each only when known. */
function usageFields(message: StoredMessage): { model?: string; tokens?: number } {
  const fields: { model?: string; tokens?: number } = {};
  if (message.model !== undefined) fields.model = message.model;
  if (message.tokens !== undefined) fields.tokens = message.tokens;
  return fields;
}

/**
 * The answer's message or lane was deleted: keep nothing, not even the crash marker, nor media the
 * runtime produced after the last checkpoint.
 */
async function dropDeleted(hub: TurnServices, owner: Owner, lane: Lane, message: StoredMessage): Promise<StoredMessage> {
  const where = { chat_id: lane.chat_id, thread_id: lane.thread_id };
  const mediaIds = message.media.map((ref) => ref.media_id);
  try {
    await hub.store(owner, { deleteMessages: [message.message_id] });
    if (mediaIds.length) {
      await hub.storage.deleteMedia(owner, mediaIds);
      await hub.options.mediaStore?.delete(owner, mediaIds);
    }
  } catch (error) {
    hub.log.warn("dropping a deleted answer failed", error);
  }
  hub.live(owner, { type: "typing", payload: { on: false, ...where } });
  hub.events.emit("turn:end", { owner, ...where, message_id: message.message_id, status: "stopped" });
  return { ...message, status: "stopped" };
}

/** Run one answer to its stored end. Never rejects; resolves with the stored message. */
export async function runAnswer(hub: TurnServices, params: AnswerParams): Promise<StoredMessage> {
  const { owner, lane, turn } = params;
  const streaming = hub.options.streaming;
  const started = hub.now();
  const where = { chat_id: lane.chat_id, thread_id: lane.thread_id };
  const message: StoredMessage = {
    message_id: newId("m"),
    role: "assistant",
    text: "",
    reasoning: "",
    ts: started,
    media: [],
    status: "streaming",
    ...where,
    ...(params.replyTo ? { reply_to: params.replyTo } : {}),
  };
  const id = message.message_id;
  turn.answer = id;
  const usage: Omit<UsageEvent, "type"> = params.model ? { model: params.model } : {};
  noteUsage(message, usage);
  const offers: MediaRef[] = [];
  let toolIndex = 0;
  const openTools: Array<{ id?: string; name: string; index: number; started: number }> = [];

  // From here the wall clock runs: a slow crash-marker commit counts against the turn too.
  const limits = new AnswerLimits(hub.options, turn);
  hub.events.emit("turn:start", { owner, ...where, message_id: id });
  hub.live(owner, { type: "typing", payload: { on: true, ...where } });

  // The crash marker: a restart finds this message still streaming and closes it (interrupted).
  let marked = false;
  let saving: Promise<unknown> = hub.storage
    .commit(owner, { messages: [{ ...message }] })
    .then(() => (marked = true))
    .catch((error) => hub.log.warn("turn checkpoint failed", error));
  // Deleted meanwhile (also through another process): stop, and store nothing of it again.
  const dropped = () => {
    turn.reason = "deleted";
    turn.controller.abort("deleted");
  };
  const checkpoint = () => {
    if (turn.reason === "deleted") return;
    const snapshot = { ...message, media: [...message.media] };
    saving = saving
      .then(() => hub.storage.commit(owner, { messages: [snapshot], ...(marked ? { requireMessages: [id] } : {}) }))
      .then((result) => result.skipped && dropped())
      .catch((error) => hub.log.warn("turn checkpoint failed", error));
  };
  let lastCheckpoint = started;

  // On disk before anyone sees the start: a crash from here on ends in an interrupted stop.
  await saving;
  if (streaming) hub.live(owner, { type: "message.start", payload: { message_id: id, role: "assistant", ...usageFields(message), ...where } });

  // message.update carries the whole text, so sending at most one per interval loses nothing.
  let dirty = false;
  let lastUpdate = 0;
  let timer: NodeJS.Timeout | undefined;
  const sendUpdate = () => {
    timer = undefined;
    if (!dirty || turn.controller.signal.aborted) return;
    dirty = false;
    lastUpdate = hub.now();
    const payload: Record<string, unknown> = { message_id: id, text: message.text, ...usageFields(message), ...where };
    if (message.reasoning) payload.reasoning = message.reasoning;
    hub.live(owner, { type: "message.update", payload });
  };
  const scheduleUpdate = () => {
    dirty = true;
    if (!streaming || timer) return;
    const wait = Math.max(0, lastUpdate + hub.options.updateIntervalMs - hub.now());
    timer = setTimeout(sendUpdate, wait);
  };

  const storeMedia = async (event: MediaEvent) => {
    const store = hub.options.mediaStore;
    if (!store) {
      hub.log.warn("runtime attached media but the gateway has no mediaStore; dropped");
      return;
    }
    const mediaId = newId("md");
    const writer = await store.createWriter(owner, mediaId);
    try {
      await writer.write(event.data);
      await writer.commit();
    } catch (error) {
      await writer.abort();
      throw error;
    }
    const record: MediaRecord = {
      media_id: mediaId,
      kind: event.kind,
      mime: event.mime,
      size: event.data.byteLength,
      filename: event.filename,
      message_id: id,
      owner,
      sha256: createHash("sha256").update(event.data).digest("hex"),
      created_ts: hub.now(),
    };
    await hub.storage.putMedia(owner, record);
    const ref: MediaRef = { media_id: mediaId, kind: event.kind, mime: event.mime, size: record.size, filename: event.filename };
    message.media.push(ref);
    offers.push({ ...ref, message_id: id });
  };

  const handle = async (event: RuntimeEvent) => {
    switch (event.type) {
      case "text":
        message.text += limits.fit(message.text.length + message.reasoning.length, event.delta);
        scheduleUpdate();
        break;
      case "reasoning":
        message.reasoning += limits.fit(message.text.length + message.reasoning.length, event.delta);
        scheduleUpdate();
        break;
      case "commentary":
        hub.live(owner, { type: "commentary", payload: { message_id: id, text: event.text, ...where } });
        break;
      case "tool-start": {
        const index = toolIndex++;
        openTools.push({ id: event.id, name: event.name, index, started: hub.now() });
        hub.live(owner, {
          type: "tool.start",
          payload: { message_id: id, index, name: event.name, preview: event.preview ?? previewOf(event.args ?? {}), args: event.args ?? {}, ...where },
        });
        break;
      }
      case "tool-end": {
        let at = event.id !== undefined ? openTools.findIndex((t) => t.id === event.id) : -1;
        if (at === -1 && event.name !== undefined) at = openTools.findLastIndex((t) => t.name === event.name);
        if (at === -1) at = openTools.length - 1;
        const open = at >= 0 ? openTools.splice(at, 1)[0] : undefined;
        const duration = event.duration ?? (open ? (hub.now() - open.started) / 1000 : 0);
        hub.live(owner, {
          type: "tool.end",
          payload: {
            message_id: id,
            index: open?.index ?? toolIndex++,
            name: event.name ?? open?.name ?? "",
            output: event.output === undefined ? null : event.output,
            duration,
            ok: event.ok,
            ...where,
          },
        });
        break;
      }
      case "usage":
        mergeUsage(usage, event);
        // Known from now on: on the next update, on checkpoints (history while streaming) and the stop.
        if (noteUsage(message, usage)) scheduleUpdate();
        break;
      case "media":
        await storeMedia(event);
        break;
      case "done":
        break;
    }
    if (streaming && hub.now() - lastCheckpoint >= hub.options.checkpointIntervalMs) {
      lastCheckpoint = hub.now();
      checkpoint();
    }
  };

  let status: MessageStatus = "complete";
  let failure: string | undefined;
  const signal = turn.controller.signal;
  const aborted = new Promise<"aborted">((resolve) => {
    if (signal.aborted) resolve("aborted");
    else signal.addEventListener("abort", () => resolve("aborted"), { once: true });
  });
  let iterator: AsyncIterator<RuntimeEvent> | undefined;
  try {
    iterator = params.events(signal)[Symbol.asyncIterator]();
    // Checked before each pull too: a runtime past a limit is not asked for one more event.
    while (!signal.aborted) {
      let idle: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        idle = setTimeout(() => resolve("timeout"), hub.options.turnTimeoutMs);
      });
      const next = await Promise.race([iterator.next(), aborted, timedOut]).finally(() => clearTimeout(idle));
      if (next === "timeout") {
        turn.reason = "timeout";
        turn.controller.abort("timeout");
        break;
      }
      if (next === "aborted" || signal.aborted) break;
      if (next.done || next.value.type === "done") break;
      await handle(next.value);
      await limits.breathe();
    }
  } catch (error) {
    if (!signal.aborted) {
      status = "error";
      failure = describeFailure(error);
      hub.log.warn(`turn failed in ${lane.chat_id}`, error);
    }
  }
  if (signal.aborted) {
    // A runtime that ignores the signal must not keep the lane: ask it to finish, but do not wait.
    Promise.resolve(iterator?.return?.()).catch(() => undefined);
    if (turn.reason === "timeout") {
      status = "error";
      failure = "The agent did not answer in time.";
    } else if (turn.reason === "limit") {
      status = "error";
      failure = limits.note;
    } else {
      status = turn.reason === "shutdown" ? "interrupted" : "stopped";
    }
  }
  limits.dispose();
  if (timer) clearTimeout(timer);

  await saving;
  // Checked after the last await before the final save: a delete here sets the reason before it stores.
  if (turn.reason === "deleted") return dropDeleted(hub, owner, lane, message);

  if (failure) message.text = message.text ? `${message.text}\n\n${failure}` : failure;
  else if (STATUS_NOTE[status] && !message.text) message.text = STATUS_NOTE[status]!;
  message.status = status;
  message.runtime = buildRuntimeInfo(usage, hub.now() - started, hub.options.runtimeInfo);
  noteUsage(message, usage);

  const final: StoredFrame = streaming ? { type: "message.stop", payload: stopPayload(message) } : { type: "message", payload: messagePayload(message) };
  const frames: StoredFrame[] = [final, ...offers.map((ref): StoredFrame => ({ type: "media.offer", payload: { ...ref, ...where } }))];

  try {
    // Once the crash marker is stored, a save that finds the message gone was raced by a delete.
    const published = await hub.store(owner, { messages: [message], ...(marked ? { requireMessages: [id] } : {}) }, frames);
    if (published.length === 0) return dropDeleted(hub, owner, lane, message);
  } catch (error) {
    // The final frame could not be stored: tell the devices live so no one waits forever.
    hub.log.error("storing the final answer failed", error);
    hub.events.emit("error", error);
    const live: ServerFrame = { type: final.type, payload: { ...final.payload, status: "error" } };
    hub.live(owner, live);
  }
  hub.live(owner, { type: "typing", payload: { on: false, ...where } });
  hub.events.emit("turn:end", { owner, ...where, message_id: id, status });
  if (params.push !== false) {
    hub.pushIfAway(owner, {
      kind: "message",
      title: "New answer",
      body: message.text.slice(0, 200),
      message_id: id,
      ...where,
    });
  }
  return message;
}
