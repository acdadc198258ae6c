/**
 * The `readState` capability of the PostgreSQL storage (docs/PROTOCOL.md §15): one watermark row
 * per owner and lane, never a row per message, moved only forward by a conditional upsert inside
 * the commit that stores its `read` frame, so two gateway processes reading at once cannot move it
 * back; unread counts per lane, each an indexed range that stops at the cap.
 * @module
 */
import type { PoolClient } from "pg";
import type { ChatId, Owner } from "chat-gateway";
import type { ReadMark, StorageImplementation } from "chat-gateway/storage";
import type { Database } from "./database.js";

/**
 * True when `mark` is newer than the lane's watermark by `(ts, message_id)`, or the lane has none.
 * The commit holds the owner's lock (`lockOwner`), which every commit of the owner in any process
 * takes, so the answer stands until the commit ends.
 */
export async function readMarkMoves(client: PoolClient, s: string, owner: Owner, mark: ReadMark): Promise<boolean> {
  const { rowCount } = await client.query(
    `SELECT 1 FROM ${s}.read_marks WHERE owner = $1 AND chat_id = $2 AND thread_key = $3 AND (ts, message_id) >= ($4::bigint, $5 COLLATE "C")`,
    [owner, mark.chat_id, mark.thread_id ?? "", mark.ts, mark.message_id],
  );
  return rowCount === 0;
}

/**
 * Moves the lane's watermark to `mark` if that is forward by `(ts, message_id)`, in one statement
 * whose row lock orders racing ones, so even a writer without the owner's lock never moves it back.
 */
export async function moveReadMark(client: PoolClient, s: string, owner: Owner, mark: ReadMark): Promise<boolean> {
  const { rowCount } = await client.query(
    `INSERT INTO ${s}.read_marks (owner, chat_id, thread_key, ts, message_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (owner, chat_id, thread_key) DO UPDATE SET ts = EXCLUDED.ts, message_id = EXCLUDED.message_id
     WHERE (${s}.read_marks.ts, ${s}.read_marks.message_id) < (EXCLUDED.ts, EXCLUDED.message_id)`,
    [owner, mark.chat_id, mark.thread_id ?? "", mark.ts, mark.message_id],
  );
  return (rowCount ?? 0) > 0;
}

/** A deleted channel's watermarks go with it: its flat lanes' and its threads'. */
export async function forgetReadMarks(client: PoolClient, s: string, owner: Owner, chatIds: ChatId[]): Promise<void> {
  await client.query(
    `DELETE FROM ${s}.read_marks WHERE owner = $1 AND (chat_id = ANY($2::text[]) OR thread_key = ANY($2::text[]))`,
    [owner, chatIds],
  );
}

/**
 * The lanes holding assistant messages, found by skipping through the index (a recursive walk,
 * one seek per lane, not a scan of history), each with the count of its assistant messages after
 * its watermark (a lane without one from the start), stopping at the cap.
 */
const unreadSql = (s: string) => `
  WITH RECURSIVE lanes(chat_id, thread_key) AS (
    (SELECT chat_id, thread_key FROM ${s}.messages WHERE owner = $1 AND role = 'assistant' ORDER BY chat_id, thread_key LIMIT 1)
    UNION ALL
    SELECT next.chat_id, next.thread_key FROM lanes, LATERAL (
      SELECT m.chat_id, m.thread_key FROM ${s}.messages m
      WHERE m.owner = $1 AND m.role = 'assistant' AND (m.chat_id, m.thread_key) > (lanes.chat_id, lanes.thread_key)
      ORDER BY m.chat_id, m.thread_key LIMIT 1) next
  )
  SELECT lanes.chat_id, lanes.thread_key, counted.n FROM lanes
  LEFT JOIN ${s}.read_marks r ON r.owner = $1 AND r.chat_id = lanes.chat_id AND r.thread_key = lanes.thread_key
  CROSS JOIN LATERAL (
    SELECT count(*)::int AS n FROM (
      SELECT 1 FROM ${s}.messages m
      WHERE m.owner = $1 AND m.role = 'assistant' AND m.chat_id = lanes.chat_id AND m.thread_key = lanes.thread_key
        AND (m.ts, m.message_id) > (coalesce(r.ts, -1), coalesce(r.message_id, '' COLLATE "C"))
      LIMIT $2) unread) counted
  WHERE counted.n > 0`;

/** The two reads of the capability. */
export function postgresReadMarks(db: Database): Required<Pick<StorageImplementation, "readMarks" | "unreadCounts">> {
  const { s, rows } = db;
  return {
    async readMarks(owner) {
      const found = await rows<{ chat_id: string; thread_key: string; ts: string; message_id: string }>(
        `SELECT chat_id, thread_key, ts, message_id FROM ${s}.read_marks WHERE owner = $1`,
        [owner],
      );
      return found.map((r) => ({
        chat_id: r.chat_id,
        thread_id: r.thread_key === "" ? null : r.thread_key,
        ts: Number(r.ts),
        message_id: r.message_id,
      }));
    },
    async unreadCounts(owner, cap) {
      const found = await rows<{ chat_id: string; thread_key: string; n: number }>(unreadSql(s), [owner, cap]);
      return found.map((r) => ({
        chat_id: r.chat_id,
        thread_id: r.thread_key === "" ? null : r.thread_key,
        unread: r.n,
      }));
    },
  };
}
