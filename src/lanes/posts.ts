/**
 * Server-side posts into a lane (`gateway.post`, webhooks, scheduled runs; docs/PROTOCOL.md §17):
 * an assistant message streamed in the lane's turn, or a prompt. The prompt of a server-side turn
 * is a user message stored in the lane, automation channels included, which only the gateway
 * writes. On a storage that keeps the turn queue it is stored `waiting` (docs/PROTOCOL.md §4.2),
 * so a crash mid-run is answered after the restart instead of lost.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import { newId } from "../support/id-generator.js";
import type { ChatId, MessageId, Owner } from "../protocol/ids.js";
import type { StoredMessage } from "../contracts/records.js";
import type { RuntimeEvent } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import type { EnsureDefaultChannel, ResolveLane } from "../channels/channel-directory.js";
import { messagePayload } from "../outbox/message-payloads.js";
import type { AbortReason, LaneTurn } from "../turn/lane-turn.js";
import { runAnswer } from "../turn/turn.js";
import { answerWaiting, runTurn, type RunServices } from "./run.js";
import { enqueueWaiting, keepsQueue, type AnswerWaiting } from "./queue.js";

/** What server-side code posts into a channel (`gateway.post`). */
export type PostInput =
  | { text: string; reasoning?: string }
  | {
      /**
       * Runs an agent turn on this prompt (at most 16,000 characters): stored first as the user
       * message the answer replies to (also in an automation channel), waiting on the durable turn
       * queue so that a crash before its answer is answered after the restart, then answered like
       * `message.send` (docs/PROTOCOL.md §17.2).
       */
      prompt: string;
    }
  | {
      /** Streamed like an agent turn (start, updates, stop) when the gateway streams. */
      events: AsyncIterable<RuntimeEvent>;
    };

/** What a post reads and writes through: the lane's turns, and the channels it posts into. */
export interface PostServices extends RunServices {
  readonly resolveLane: ResolveLane;
  readonly ensureDefaultChannel: EnsureDefaultChannel;
}

/**
 * `gateway.post`: the message waits its turn in the lane and resolves stored. `checkRunning`
 * throws when the gateway is no longer running; it is asked again once the lane is resolved.
 */
export async function post(
  services: PostServices,
  owner: Owner,
  chatId: ChatId,
  input: PostInput,
  threadId: ChatId | null | undefined,
  checkRunning: () => void,
): Promise<StoredMessage> {
  checkRunning();
  await services.ensureDefaultChannel(owner);
  const resolved = await services.resolveLane(owner, chatId, threadId);
  checkRunning();
  const lane = { chat_id: resolved.chat_id, thread_id: resolved.thread_id };
  // A prompt waits on the durable queue (docs/PROTOCOL.md §4.2): a crash mid-run is answered after the restart.
  if ("prompt" in input)
    return answerPrompt(services, owner, lane, await storePrompt(services, owner, lane, input.prompt));
  const events =
    "events" in input
      ? () => input.events
      : "text" in input
        ? () => textOnly(input.text, input.reasoning)
        : () => textOnly("");
  return new Promise<StoredMessage>((resolve, reject) => {
    const run = async (turn: LaneTurn) => {
      try {
        const message = await runAnswer(services, { owner, lane, turn, events });
        // The lane went away under the answer: nothing was kept, so there is no message to give.
        if (turn.reason === "deleted") reject(droppedError("deleted", lane));
        else resolve(message);
      } catch (error) {
        reject(error);
      }
    };
    services.lanes.enqueue(owner, lane, run, (reason) => reject(droppedError(reason, lane)));
  });
}

/** A posted text as the events of an answer. */
async function* textOnly(text: string, reasoning?: string): AsyncIterable<RuntimeEvent> {
  if (reasoning) yield { type: "reasoning", delta: reasoning };
  yield { type: "text", delta: text };
}

/** The longest prompt a server-side turn takes, characters. */
export const MAX_PROMPT_CHARS = 16_000;

/** Store `text` as a user message of the lane (waiting for its answer), broadcast like any message. */
export async function storePrompt(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  text: string,
  messageId: MessageId = newId("m"),
): Promise<StoredMessage> {
  if (typeof text !== "string" || text.trim() === "")
    throw new GatewayError("unsupported", "post: prompt must be non-empty text");
  if (text.length > MAX_PROMPT_CHARS)
    throw new GatewayError("unsupported", `post: prompt is over ${MAX_PROMPT_CHARS} characters`);
  const message: StoredMessage = {
    message_id: messageId,
    role: "user",
    text,
    reasoning: "",
    ts: services.now(),
    media: [],
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
  };
  if (keepsQueue(services)) message.waiting = true;
  const requireChannels = lane.thread_id === null ? [lane.chat_id] : [lane.chat_id, lane.thread_id];
  const stored = await services.store(owner, { messages: [message], requireChannels }, [
    { type: "message", payload: messagePayload(message) },
  ]);
  if (!stored.length) throw new GatewayError("not_found", `post: chat "${lane.chat_id}" was deleted`);
  return message;
}

/**
 * Queue the turn of a stored prompt on the durable queue; resolves with its stored answer, also
 * one another process gave (it took the lane first). Rejects `not_found` when the prompt or its
 * answer went with a deleted chat, `unsupported` when the gateway shut down before it ran (the
 * prompt then waits, stored, for the next start).
 */
export function answerPrompt(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  prompt: StoredMessage,
): Promise<StoredMessage> {
  return new Promise<StoredMessage>((resolve, reject) => {
    let settled = false;
    const others = answerWaiting(services);
    const answer: AnswerWaiting = async (of, turn, message) => {
      if (message.message_id !== prompt.message_id) return others(of, turn, message);
      try {
        const stored = await runTurn(services, of, lane, message, turn);
        settled = true;
        if (turn.reason === "deleted") reject(droppedError("deleted", lane));
        else resolve(stored);
      } catch (error) {
        settled = true;
        reject(error);
      }
    };
    enqueueWaiting(services, owner, lane, prompt, answer, (dropped) => {
      if (settled) return;
      // Not answered by this job: another process did, a delete took it, or it was never run.
      findAnswer(services, owner, prompt).then(
        (found) =>
          found && found.status !== "streaming" ? resolve(found) : reject(droppedError(dropped ?? "deleted", lane)),
        reject,
      );
    });
  });
}

/** The stored answer to a prompt (an assistant message replying to it), if any. */
export async function findAnswer(
  services: Pick<RunServices, "storage">,
  owner: Owner,
  prompt: StoredMessage,
): Promise<StoredMessage | undefined> {
  const page = await services.storage.history(owner, {
    chat_id: prompt.chat_id,
    thread_id: prompt.thread_id,
    limit: 100,
  });
  return page?.messages.find((m) => m.role === "assistant" && m.reply_to === prompt.message_id);
}

/** Why a server-side turn's job never ran (or its answer was dropped with its lane). */
export function droppedError(reason: AbortReason, lane: Lane): GatewayError {
  if (reason === "deleted")
    return new GatewayError("not_found", `post: chat "${lane.chat_id}" was deleted before the answer was stored`);
  return new GatewayError("unsupported", "post: the gateway shut down before the answer ran");
}
