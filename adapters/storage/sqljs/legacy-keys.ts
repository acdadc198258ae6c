/**
 * The redaction key of an outbox frame as chat-gateway computed it when the frame was written
 * without one: rows of a schema before version 3, and journal records of versions before the core
 * handed each frame its `redactKey` (a crash before an upgrade leaves such records to replay).
 * Frozen on purpose: it must give what those versions gave, whatever the core's rule becomes.
 * @module
 */

/** Frames about a channel or a lane, which go with that channel or thread. */
const LANE_FRAMES = new Set(["channel.created", "channel.renamed", "notification"]);

/** `m:<message_id>`, `c:<thread_id or chat_id>` for a lane frame, or null (docs/PROTOCOL.md §5). */
export function legacyRedactKey(type: string, payload: Record<string, unknown>): string | null {
  const { message_id: messageId, chat_id: chatId, thread_id: threadId } = payload;
  if (typeof messageId === "string") return `m:${messageId}`;
  if (!LANE_FRAMES.has(type)) return null;
  if (typeof threadId === "string") return `c:${threadId}`;
  if (typeof chatId === "string") return `c:${chatId}`;
  return null;
}
