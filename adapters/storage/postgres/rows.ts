// How records become rows: the values of a message row and the rules that shape a batch.
import type { ChatId, StoredMessage } from "chat-gateway";
import { foldedWords, tsvectorText } from "./search.js";

/** The flat lane of a channel is stored as "" so (owner, chat_id, thread_key) can be a key. */
export function laneKey(threadId: ChatId | null): string {
  return threadId ?? "";
}

/**
 * Serialise before the transaction: a value JSON cannot hold throws while nothing is written. The
 * values of the `messages` row, then of its `message_search` row (words and folded words).
 */
export function prepareMessage(m: StoredMessage): unknown[] {
  const vectors = tsvectorText(m.text, m.chat_id, m.thread_id);
  return [
    m.message_id,
    m.chat_id,
    laneKey(m.thread_id),
    m.role,
    m.status ?? (m.waiting ? "waiting" : null),
    m.ts,
    m.client_msg_id ?? null,
    m.text,
    JSON.stringify(m),
    vectors.lanes,
    vectors.words,
    foldedWords(m.text),
  ];
}

/** The last occurrence of each key wins, as if applied one by one (one INSERT cannot touch a row twice). */
export function lastByKey<T>(items: T[], key: (item: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) {
    byKey.delete(key(item));
    byKey.set(key(item), item);
  }
  return [...byKey.values()];
}
