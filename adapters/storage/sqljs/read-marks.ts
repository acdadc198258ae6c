/**
 * The `readState` capability of the sql.js storage (docs/PROTOCOL.md §15): one watermark row per
 * owner and lane, never a row per message, moved only forward inside the commit that stores its
 * `read` frame; unread counts per lane, each an indexed range that stops at the cap.
 * @module
 */
import type { ChatId, Owner } from "chat-gateway";
import type { LaneUnread, ReadMark } from "chat-gateway/storage";
import type { Sql } from "./sql.js";

/**
 * Migration 7: the watermarks, and an index of assistant messages per lane in `(ts, message_id)`
 * order, so a count walks only the unread assistant messages (at most the cap), whatever the lane
 * holds besides.
 */
export const READ_MARKS_MIGRATION = `
  CREATE TABLE read_marks (
    owner TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    thread_key TEXT NOT NULL,
    ts INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (owner, chat_id, thread_key)
  ) WITHOUT ROWID;
  CREATE INDEX messages_assistant ON messages (owner, chat_id, thread_key, ts, message_id) WHERE role = 'assistant';
`;

/**
 * True when `mark` is newer than the lane's stored watermark by `(ts, message_id)`, or the lane
 * has none. The database process applies one op at a time, so nothing commits between this check
 * and {@link storeReadMark}.
 */
export function movesForward(sql: Sql, owner: Owner, mark: ReadMark): boolean {
  const row = sql.get("SELECT ts, message_id FROM read_marks WHERE owner = ? AND chat_id = ? AND thread_key = ?", [
    owner,
    mark.chat_id,
    mark.thread_id ?? "",
  ]);
  if (!row) return true;
  const [ts, messageId] = [row[0] as number, row[1] as string];
  return mark.ts !== ts ? mark.ts > ts : mark.message_id > messageId;
}

export function storeReadMark(sql: Sql, owner: Owner, mark: ReadMark): void {
  sql.run("INSERT OR REPLACE INTO read_marks (owner, chat_id, thread_key, ts, message_id) VALUES (?, ?, ?, ?, ?)", [
    owner,
    mark.chat_id,
    mark.thread_id ?? "",
    mark.ts,
    mark.message_id,
  ]);
}

/** A deleted channel's watermarks go with it: its flat lane's and its threads'. */
export function forgetReadMarks(sql: Sql, owner: Owner, chatId: ChatId): void {
  sql.run("DELETE FROM read_marks WHERE owner = ? AND (chat_id = ? OR thread_key = ?)", [owner, chatId, chatId]);
}

/** The next lane after `(chatId, threadKey)` holding an assistant message: one index seek. */
const NEXT_LANE =
  "SELECT chat_id, thread_key FROM messages INDEXED BY messages_assistant WHERE owner = ? AND role = 'assistant' AND (chat_id, thread_key) > (?, ?) ORDER BY chat_id, thread_key LIMIT 1";

/** Unread assistant messages of one lane after `(ts, message_id)`, stopping at the cap. */
const COUNT_LANE =
  "SELECT count(*) FROM (SELECT 1 FROM messages INDEXED BY messages_assistant WHERE owner = ? AND role = 'assistant' AND chat_id = ? AND thread_key = ? AND (ts, message_id) > (?, ?) LIMIT ?)";

/** The read side, by name (part of the storage's reads). */
export const readMarkQueries = {
  readMarks(sql: Sql, owner: Owner): ReadMark[] {
    return sql.all("SELECT chat_id, thread_key, ts, message_id FROM read_marks WHERE owner = ?", [owner]).map((r) => ({
      chat_id: r[0] as string,
      thread_id: r[1] === "" ? null : (r[1] as string),
      ts: r[2] as number,
      message_id: r[3] as string,
    }));
  },

  /**
   * Walks the lanes that hold assistant messages by skipping through the index (one seek each,
   * not a scan of history), and counts each lane's assistant messages after its watermark (a lane
   * without one from the start: ts -1 comes before every message).
   */
  unreadCounts(sql: Sql, owner: Owner, cap: number): LaneUnread[] {
    const out: LaneUnread[] = [];
    for (let lane = sql.get(NEXT_LANE, [owner, "", ""]); lane; lane = sql.get(NEXT_LANE, [owner, lane[0], lane[1]])) {
      const [chatId, threadKey] = [lane[0] as string, lane[1] as string];
      const mark = sql.get("SELECT ts, message_id FROM read_marks WHERE owner = ? AND chat_id = ? AND thread_key = ?", [
        owner,
        chatId,
        threadKey,
      ]);
      const unread = sql.get(COUNT_LANE, [
        owner,
        chatId,
        threadKey,
        mark?.[0] ?? -1,
        mark?.[1] ?? "",
        cap,
      ])![0] as number;
      if (unread > 0) out.push({ chat_id: chatId, thread_id: threadKey === "" ? null : threadKey, unread });
    }
    return out;
  },
};
