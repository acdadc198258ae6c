/**
 * Which stored outbox frames show what a deletion removes, so storages can redact them in the same
 * commit (docs/PROTOCOL.md §5: a replay never hands out deleted content). `defineStorage()` gives
 * each frame its key (`OutboxFrame.redactKey`); the key formats are part of the storage contract.
 * @module
 */
import type { ChatId, MessageId } from "../protocol/ids.js";

/** Frames about a channel or a lane: a channel's name and look, or a notice concerning the lane. */
const LANE_FRAMES = new Set(["channel.created", "channel.renamed", "notification"]);

/** The redaction key of a deleted message. */
export function messageRedactionKey(messageId: MessageId): string {
  return `m:${messageId}`;
}

/** The redaction key of a deleted channel or thread. */
export function channelRedactionKey(chatId: ChatId): string {
  return `c:${chatId}`;
}

/**
 * The key under which a stored frame is redacted, or undefined for a frame that is kept whatever
 * is deleted (`message.deleted`, `channel.deleted`: ids only; a notification about no lane). A
 * frame about one message (`message`, `message.stop`, `media.offer`) goes with that message;
 * `channel.created`, `channel.renamed` and a notification about a lane go with that channel or
 * thread. Storages index frames by this key (`OutboxFrame.redactKey`) when they append them.
 */
export function outboxRedactionKey(frame: { type: string; payload: Record<string, unknown> }): string | undefined {
  const { message_id: messageId, chat_id: chatId, thread_id: threadId } = frame.payload;
  if (typeof messageId === "string") return messageRedactionKey(messageId);
  if (!LANE_FRAMES.has(frame.type)) return undefined;
  // A thread's frames go with the thread, which its parent's deletion deletes too.
  if (typeof threadId === "string") return channelRedactionKey(threadId);
  if (typeof chatId === "string") return channelRedactionKey(chatId);
  return undefined;
}
