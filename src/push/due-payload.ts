/**
 * What a waiting push keeps in storage (docs/PROTOCOL.md §21.6): the push as it will go out, the
 * ask's offer for its buttons, and the lane's watermark when it was decided (an ask counts as read
 * once the watermark moved after it), so that any process can decide and send it later.
 * @module
 */
import type { DuePushRecord } from "../contracts/due-pushes.js";
import type { PushMessage } from "../contracts/push.js";
import type { ReadMark } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import { MAX_PUSH_ACTIONS, type AskOffer } from "./action-tokens.js";

/** A waiting push, read back. */
export interface DuePush {
  message: PushMessage;
  offer?: AskOffer;
  /** The lane's watermark when the push was decided. */
  before?: ReadMark;
}

/** The most characters a stored payload has (the `duePushes` contract's bound). */
const MAX_PAYLOAD = 16_384;

/** The key of an answer's (`m:`) or an ask's (`p:`) push; undefined for a plain notification. */
export function duePushKey(message: PushMessage): string | undefined {
  if (message.message_id !== undefined) return `m:${message.message_id}`;
  if (message.picker_id !== undefined) return askPushKey(message.picker_id);
  return undefined;
}

/** The key of an ask's waiting push. */
export function askPushKey(pickerId: string): string {
  return `p:${pickerId}`;
}

/**
 * The record to store, or undefined when the push has no key or its payload would still be over
 * the bound after cutting its texts (the push then waits in memory only).
 */
export function duePushRecord(owner: Owner, push: DuePush, dueAt: number): DuePushRecord | undefined {
  const key = duePushKey(push.message);
  if (key === undefined || key.length > 300) return undefined;
  const message = { ...push.message, title: push.message.title.slice(0, 200), body: push.message.body.slice(0, 1_000) };
  const offer = push.offer && { ...push.offer, options: push.offer.options.slice(0, MAX_PUSH_ACTIONS) };
  const payload = JSON.stringify({ message, offer, before: push.before });
  return payload.length > MAX_PAYLOAD ? undefined : { owner, key, payload, due_at: dueAt };
}

/** The push a stored record holds; undefined when its payload is not one (written by something else). */
export function duePushOf(record: DuePushRecord): DuePush | undefined {
  try {
    const parsed = JSON.parse(record.payload) as DuePush;
    const message = parsed?.message;
    if (typeof message !== "object" || message === null || duePushKey(message) !== record.key) return undefined;
    return parsed;
  } catch {
    return undefined;
  }
}
