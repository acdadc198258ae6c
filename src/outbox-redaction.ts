/**
 * Which stored outbox frames show what a deletion removes, so storages can redact them in the same
 * commit (docs/PROTOCOL.md §5: a replay never hands out deleted content).
 * @module
 */
import type { ChatId, MessageId } from "./ids.js";
import type { OutboxFrame } from "./storage.js";

/** Channel frames that carry a channel's name and look. */
const CHANNEL_FRAMES = new Set(["channel.created", "channel.renamed"]);

/** The redaction key of a deleted message. */
export function messageRedactionKey(messageId: MessageId): string {
  return `m:${messageId}`;
}

/** The redaction key of a deleted channel or thread. */
export function channelRedactionKey(chatId: ChatId): string {
  return `c:${chatId}`;
}

/**
 * The key under which a stored frame is redacted, or undefined for a frame that shows no content
 * (`message.deleted`, `channel.deleted`, notifications). A frame about one message (`message`,
 * `message.stop`, `media.offer`) goes with that message; `channel.created` and `channel.renamed`
 * go with their channel. Storages index frames by this key when they append them.
 */
export function outboxRedactionKey(frame: OutboxFrame): string | undefined {
  const { message_id: messageId, chat_id: chatId } = frame.payload;
  if (typeof messageId === "string") return messageRedactionKey(messageId);
  if (CHANNEL_FRAMES.has(frame.type) && typeof chatId === "string") return channelRedactionKey(chatId);
  return undefined;
}
