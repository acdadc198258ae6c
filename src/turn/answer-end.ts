/**
 * How an answer ends: its status and note, the final frame stored once (docs/PROTOCOL.md §5),
 * typing off, the `turn:end` event and push; or, when the answer was deleted meanwhile, nothing
 * kept at all.
 * @module
 */
import type { TurnServices } from "./turn-services.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneTurn } from "./lane-turn.js";
import type { Change, LaneFence } from "../contracts/storage.js";
import type { MediaRef, MessageStatus, StoredMessage } from "../contracts/records.js";
import type { UsageEvent } from "../contracts/runtime.js";
import type { StoredFrame } from "../protocol/protocol.js";
import { messagePayload, stopPayload } from "../outbox/message-payloads.js";
import { buildRuntimeInfo } from "./runtime-info.js";
import { noteUsage } from "./answer-recorder.js";
import { sleep } from "../support/clock.js";

const STATUS_NOTE: Partial<Record<MessageStatus, string>> = {
  stopped: "(stopped)",
  interrupted: "(interrupted: the gateway restarted)",
};

/** What the run of an answer left for its end. */
export interface AnswerOutcome {
  status: MessageStatus;
  /** Text appended for the user when the turn failed or hit a limit. */
  failure?: string;
  usage: Omit<UsageEvent, "type">;
  offers: MediaRef[];
  /** When the answer started (epoch ms), for the runtime footer's latency. */
  started: number;
  /** True once the crash marker is stored: the final save then requires the message, still streaming. */
  marked: boolean;
  push: boolean;
  /** The lane token the turn holds, if any: the final is stored only while it is the lane's. */
  fence?: LaneFence;
}

/** The user message an answer ends the turn of leaves the durable turn queue in the same commit. */
function answered(message: StoredMessage): { answered?: string[] } {
  return message.reply_to ? { answered: [message.reply_to] } : {};
}

/** The status an aborted turn ends with, and what to tell the user. */
export function abortedOutcome(
  turn: LaneTurn,
  limitNote: string | undefined,
): { status: MessageStatus; failure?: string } {
  if (turn.reason === "timeout") return { status: "error", failure: "The agent did not answer in time." };
  if (turn.reason === "limit") return { status: "error", failure: limitNote };
  return { status: turn.reason === "shutdown" || turn.reason === "lost" ? "interrupted" : "stopped" };
}

/**
 * The answer's message or lane was deleted: keep nothing, not even the crash marker, nor media the
 * runtime produced after the last checkpoint.
 */
export async function dropDeleted(
  services: TurnServices,
  owner: Owner,
  message: StoredMessage,
  fence?: LaneFence,
): Promise<StoredMessage> {
  const where = { chat_id: message.chat_id, thread_id: message.thread_id };
  const mediaIds = message.media.map((ref) => ref.media_id);
  try {
    await services.store(owner, {
      deleteMessages: [message.message_id],
      ...answered(message),
      ...(fence ? { fence } : {}),
    });
    if (mediaIds.length) {
      await services.storage.deleteMedia(owner, mediaIds);
      await services.options.mediaStore?.delete(owner, mediaIds);
    }
  } catch (error) {
    services.log.warn("dropping a deleted answer failed", error);
  }
  services.live(owner, { type: "typing", payload: { on: false, ...where } });
  services.events.emit("turn:end", { owner, ...where, message_id: message.message_id, status: "stopped" });
  return { ...message, status: "stopped" };
}

/** Waits before each retry of a final the storage could not take (ms): about 16 s in all. */
const FINAL_RETRY_MS = [250, 500, 1_000, 2_000, 4_000, 8_000];

/**
 * Store the answer's end, retried while the storage is unreachable (a database restarting): a
 * retry is safe, as a final that did commit before its answer was lost is refused the second time
 * (`requireStreaming`). Rejects with the last error once the retries are spent.
 */
async function storeFinal(services: TurnServices, owner: Owner, change: Change, frames: StoredFrame[]) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await services.store(owner, change, frames);
    } catch (error) {
      if (attempt >= FINAL_RETRY_MS.length) throw error;
      services.log.warn("storing the final answer failed; retrying", error);
      await sleep(services.options.clock, FINAL_RETRY_MS[attempt]);
    }
  }
}

/**
 * The final was refused. Still stored: another process holds the lane or ended the answer, and
 * this one writes and sends nothing more of it (docs/PROTOCOL.md §4.2). Gone: raced by a delete.
 */
async function refusedEnd(
  services: TurnServices,
  owner: Owner,
  message: StoredMessage,
  fence: LaneFence | undefined,
): Promise<StoredMessage> {
  const stored = await services.storage.getMessage(owner, message.message_id);
  if (!stored) return dropDeleted(services, owner, message, fence);
  services.log.info(`answer ${message.message_id} was ended by another process; this one stops quietly`);
  return stored;
}

/** Store the final frame (and media offers), then typing off, `turn:end` and push. */
export async function finishAnswer(
  services: TurnServices,
  owner: Owner,
  message: StoredMessage,
  outcome: AnswerOutcome,
): Promise<StoredMessage> {
  const where = { chat_id: message.chat_id, thread_id: message.thread_id };
  const { status, failure } = outcome;
  const id = message.message_id;
  if (failure) message.text = message.text ? `${message.text}\n\n${failure}` : failure;
  else if (STATUS_NOTE[status] && !message.text) message.text = STATUS_NOTE[status]!;
  message.status = status;
  message.runtime = buildRuntimeInfo(outcome.usage, services.now() - outcome.started, services.options.runtimeInfo);
  noteUsage(message, outcome.usage);

  const final: StoredFrame = services.options.streaming
    ? { type: "message.stop", payload: stopPayload(message) }
    : { type: "message", payload: messagePayload(message) };
  const offers = outcome.offers.map(
    (ref): StoredFrame => ({ type: "media.offer", payload: { ...ref, message_id: ref.message_id ?? id, ...where } }),
  );
  // Once the crash marker is stored the final is stored only over it, still streaming: an answer
  // ends once, whichever process tries (docs/PROTOCOL.md §4.2).
  const checks = outcome.marked ? { requireMessages: [id], requireStreaming: [id] } : {};
  const fence = outcome.fence ? { fence: outcome.fence } : {};
  const change: Change = { messages: [message], ...checks, ...answered(message), ...fence };
  try {
    const published = await storeFinal(services, owner, change, [final, ...offers]);
    if (published.length === 0) return await refusedEnd(services, owner, message, outcome.fence);
  } catch (error) {
    services.log.error("storing the final answer failed", error);
    services.events.emit("error", error);
    // With a lane token, the recovery of whichever process takes the lane next stores the end
    // (`interrupted`) once the storage is back: a live final now would be a second one.
    if (!outcome.fence) {
      // The final frame could not be stored: tell the devices live so no one waits forever.
      const failed = { ...message, status: "error" as const };
      services.live(
        owner,
        services.options.streaming
          ? { type: "message.stop", payload: stopPayload(failed) }
          : { type: "message", payload: messagePayload(failed) },
      );
    }
  }
  services.live(owner, { type: "typing", payload: { on: false, ...where } });
  services.events.emit("turn:end", { owner, ...where, message_id: id, status });
  if (outcome.push) {
    services.pushIfAway(owner, {
      kind: "message",
      title: "New answer",
      body: message.text.slice(0, 200),
      message_id: id,
      ...where,
    });
  }
  return message;
}
