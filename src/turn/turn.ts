/**
 * One assistant answer, from the first event to the stored final frame: typing on and off,
 * streamed or whole, the crash marker and checkpoints, stop, timeout, limits and failure. Used
 * for agent turns, slash commands and server-side posts alike. The pieces: the recorder folds
 * events into the message, the updates throttle live frames, the checkpoints store it while it
 * runs, and the end stores the final frame.
 * @module
 */
import type { TurnServices } from "./turn-services.js";
import { newId } from "../support/id-generator.js";
import type { MessageId, Owner } from "../protocol/ids.js";
import type { LaneTurn } from "./lane-turn.js";
import type { MessageStatus, StoredMessage } from "../contracts/records.js";
import type { RuntimeEvent } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import { AnswerLimits } from "./turn-limits.js";
import { AnswerRecorder } from "./answer-recorder.js";
import { AnswerUpdates, usageFields } from "./answer-updates.js";
import { AnswerCheckpoints } from "./answer-checkpoints.js";
import { abortedOutcome, dropDeleted, finishAnswer } from "./answer-end.js";
import { IdleTimeout } from "./idle-timeout.js";
import { joinFrames } from "./join-frames.js";

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

function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : typeof error === "string" ? error : "";
  const clean = message.replace(/\s+/g, " ").trim().slice(0, 500);
  return clean ? `The agent failed: ${clean}` : "The agent failed unexpectedly.";
}

/** How the pull loop ended. */
interface RunResult {
  status: MessageStatus;
  failure?: string;
  iterator?: AsyncIterator<RuntimeEvent>;
}

/**
 * Pull the runtime's events into the recorder until the stream ends, the turn is aborted, the
 * runtime is idle too long or it throws.
 */
async function pullEvents(
  services: TurnServices,
  params: AnswerParams,
  recorder: AnswerRecorder,
  limits: AnswerLimits,
  checkpoints: AnswerCheckpoints,
  idle: IdleTimeout,
): Promise<RunResult> {
  const { turn } = params;
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
      const next = await Promise.race([iterator.next(), aborted, idle.next()]).finally(() => idle.clear());
      if (next === "timeout") {
        turn.reason = "timeout";
        turn.controller.abort("timeout");
        break;
      }
      if (next === "aborted" || signal.aborted) break;
      if (next.done || next.value.type === "done") break;
      await recorder.record(next.value);
      checkpoints.maybeSave();
      await limits.breathe();
    }
  } catch (error) {
    if (!signal.aborted) {
      services.log.warn(`turn failed in ${params.lane.chat_id}`, error);
      return { status: "error", failure: describeFailure(error), iterator };
    }
  }
  if (signal.aborted) return { ...abortedOutcome(turn, limits.note), iterator };
  return { status: "complete", iterator };
}

/** Run one answer to its stored end. Never rejects; resolves with the stored message. */
export async function runAnswer(services: TurnServices, params: AnswerParams): Promise<StoredMessage> {
  const { owner, lane, turn } = params;
  const started = services.now();
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
  turn.answer = message.message_id;
  turn.replyTo = params.replyTo;
  const updates = new AnswerUpdates(services, owner, message, turn.controller.signal);

  // From here the wall clock runs: a slow crash-marker commit counts against the turn too.
  const limits = new AnswerLimits(services.options, turn);
  const recorder = new AnswerRecorder(services, owner, message, { limits, updates, model: params.model });
  services.events.emit("turn:start", { owner, ...where, message_id: message.message_id });
  services.live(owner, { type: "typing", payload: { on: true, ...where } });
  const checkpoints = new AnswerCheckpoints(services, owner, message, turn);
  // On disk before anyone sees the start: a crash from here on ends in an interrupted stop.
  await checkpoints.settled();
  if (services.options.streaming) {
    services.live(owner, {
      type: "message.start",
      payload: {
        message_id: message.message_id,
        role: "assistant",
        ...usageFields(message),
        ...where,
        ...(message.reply_to ? { reply_to: message.reply_to } : {}),
      },
    });
  }

  const idle = new IdleTimeout(services.options.turnTimeoutMs, services.options.clock);
  let asking = false;
  turn.snapshot = () => joinFrames(message, recorder.runningTools(), asking, services.options.streaming);
  // While the person is asked, typing is off and the idle clock stops (docs/PROTOCOL.md §11).
  turn.onAsk = (open) => {
    asking = open;
    if (open) idle.pause();
    else idle.resume();
    if (idle.paused) limits.pause();
    else limits.resume();
    if (!turn.controller.signal.aborted) services.live(owner, { type: "typing", payload: { on: !open, ...where } });
  };
  const result = await pullEvents(services, params, recorder, limits, checkpoints, idle);
  turn.onAsk = undefined;
  turn.snapshot = undefined;
  // A runtime that ignores the signal must not keep the lane: ask it to finish, but do not wait.
  if (turn.controller.signal.aborted) Promise.resolve(result.iterator?.return?.()).catch(() => undefined);
  limits.dispose();
  updates.dispose();
  await turn.beforeEnd?.();
  if (turn.asks?.length) message.asks = turn.asks;

  await checkpoints.settled();
  // Checked after the last await before the final save: a delete here sets the reason before it stores.
  if (turn.reason === "deleted") return dropDeleted(services, owner, message, turn.fence);
  return finishAnswer(services, owner, message, {
    status: result.status,
    failure: result.failure,
    usage: recorder.usage,
    offers: recorder.offers,
    started,
    marked: checkpoints.marked,
    push: params.push !== false,
    ...(turn.fence ? { fence: turn.fence } : {}),
  });
}
