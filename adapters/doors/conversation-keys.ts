/**
 * The keys a door sends its messages with (`client_msg_id`, docs/PROTOCOL.md §4.1): a hash of the
 * conversation up to and including the message, so a stateless client's next request finds the
 * thread again, and a repeat of a request is the gateway's own idempotent retry.
 * @module
 */
import { createHash } from "node:crypto";
import type { ChatTurn } from "./chat-input.js";

/** How many new conversations may open with the same first message and still be found again. */
export const FIRST_MESSAGE_SLOTS = 8;

/** The key of a message sent after `turns` (which end with that message). */
export function conversationKey(turns: readonly ChatTurn[]): string {
  const hash = createHash("sha256");
  for (const turn of turns)
    hash.update(`${turn.role === "user" ? "u" : "a"}${turn.text.trim().length}:${turn.text.trim()}`);
  return `door:${hash.digest("base64url").slice(0, 43)}`;
}

/**
 * The keys a conversation's first message may have: several new conversations can open with the
 * same words ("hi"), so each takes the first free slot.
 */
export function firstMessageKeys(text: string): string[] {
  const base = conversationKey([{ role: "user", text }]);
  return Array.from({ length: FIRST_MESSAGE_SLOTS }, (_, slot) => `${base}.${slot}`);
}

/**
 * The key of a message sent after the answer `previous` (a Responses `previous_response_id`). It
 * names `previous` in the clear, so any process reads which response a stored message continued.
 */
export function continuationKey(previous: string, text: string): string {
  const hash = createHash("sha256").update(text.trim()).digest("base64url").slice(0, 32);
  return `resp:${previous}:${hash}`;
}

/** The answer a message sent with a {@link continuationKey} continued, or undefined. */
export function continuedAnswer(key: string | undefined): string | undefined {
  const match = key === undefined ? null : /^resp:([A-Za-z0-9_-]{1,128}):[A-Za-z0-9_-]{32}$/.exec(key);
  return match ? match[1] : undefined;
}
