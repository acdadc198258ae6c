import type { Channel, ChatId, Device, MediaRecord, Owner, Seq, StoredMessage } from "chat-gateway";
import type { HistoryPage, HistoryQuery, OutboxBounds, OutboxEntry, TurnScope } from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import { lastSeq } from "./seq.js";
import type { Sql } from "./sql.js";

function message(text: unknown, data: unknown): StoredMessage {
  return { ...(JSON.parse(data as string) as Omit<StoredMessage, "text">), text: text as string };
}

/** Messages matching `where`, of every owner or of one lane. */
function turnRows(
  sql: Sql,
  where: string,
  scope: TurnScope | undefined,
  order = "",
): Array<{ owner: Owner; message: StoredMessage }> {
  const rows =
    scope?.chat_id !== undefined
      ? sql.all(
          `SELECT owner, text, data FROM messages WHERE ${where} AND owner = ? AND chat_id = ? AND thread_key = ?${order}`,
          [scope.owner, scope.chat_id, scope.thread_id ?? ""],
        )
      : scope
        ? sql.all(`SELECT owner, text, data FROM messages WHERE ${where} AND owner = ?${order}`, [scope.owner])
        : sql.all(`SELECT owner, text, data FROM messages WHERE ${where}${order}`);
  return rows.map((r) => ({ owner: r[0] as string, message: message(r[1], r[2]) }));
}

/** A message row's size as a page counts it: its text and its JSON record. */
function messageBytes(row: unknown[]): number {
  return (row[0] as string).length + (row[1] as string).length;
}

/**
 * The statement of an outbox page: every kept frame after a seq, or with `types` only frames of
 * those types, found through the `outbox_by_type` index (owner, type, seq).
 */
export function outboxPageSql(types?: readonly string[]): string {
  if (!types)
    return "SELECT seq, ts, type, payload FROM outbox WHERE owner = ? AND seq > ? AND type <> '' ORDER BY seq LIMIT ?";
  // Named: without statistics the planner would walk the primary key for the ORDER BY instead.
  const only = `type IN (${types.map(() => "?").join(", ") || "NULL"})`;
  return `SELECT seq, ts, type, payload FROM outbox INDEXED BY outbox_by_type WHERE owner = ? AND seq > ? AND ${only} ORDER BY seq LIMIT ?`;
}

/** The read side of the schema; every result is freshly parsed, so callers own it. */
export const queries = {
  getChannel(sql: Sql, owner: Owner, chatId: ChatId): Channel | undefined {
    const row = sql.get("SELECT data FROM channels WHERE owner = ? AND chat_id = ?", [owner, chatId]);
    return row && (JSON.parse(row[0] as string) as Channel);
  },

  listChannels(sql: Sql, owner: Owner): Channel[] {
    return sql
      .all("SELECT data FROM channels WHERE owner = ?", [owner])
      .map((r) => JSON.parse(r[0] as string) as Channel);
  },

  getMessage(sql: Sql, owner: Owner, messageId: string): StoredMessage | undefined {
    const row = sql.get("SELECT text, data FROM messages WHERE owner = ? AND message_id = ?", [owner, messageId]);
    return row && message(row[0], row[1]);
  },

  findByClientMsgId(sql: Sql, owner: Owner, chatId: ChatId, clientMsgId: string): StoredMessage | undefined {
    const row = sql.get(
      "SELECT text, data FROM messages WHERE owner = ? AND client_msg_id = ? AND (chat_id = ? OR thread_key = ?) LIMIT 1",
      [owner, clientMsgId, chatId, chatId],
    );
    return row && message(row[0], row[1]);
  },

  /**
   * One row more than asked tells whether older messages exist. The page ends early, newest kept,
   * once it holds `LIMITS.storagePageBytes` (the Storage contract's bound).
   */
  history(sql: Sql, owner: Owner, q: HistoryQuery): HistoryPage | undefined {
    const threadKey = q.thread_id ?? "";
    let page: { rows: unknown[][]; more: boolean };
    if (q.before !== undefined) {
      const at = sql.get(
        "SELECT ts FROM messages WHERE owner = ? AND message_id = ? AND chat_id = ? AND thread_key = ?",
        [owner, q.before, q.chat_id, threadKey],
      );
      if (!at) return undefined;
      page = sql.allWithin(
        `SELECT text, data FROM messages WHERE owner = ? AND chat_id = ? AND thread_key = ? AND (ts, message_id) < (?, ?)
         ORDER BY ts DESC, message_id DESC LIMIT ?`,
        [owner, q.chat_id, threadKey, at[0], q.before, q.limit + 1],
        LIMITS.storagePageBytes,
        messageBytes,
      );
    } else {
      page = sql.allWithin(
        "SELECT text, data FROM messages WHERE owner = ? AND chat_id = ? AND thread_key = ? ORDER BY ts DESC, message_id DESC LIMIT ?",
        [owner, q.chat_id, threadKey, q.limit + 1],
        LIMITS.storagePageBytes,
        messageBytes,
      );
    }
    const has_more = page.more || page.rows.length > q.limit;
    const messages = page.rows
      .slice(0, q.limit)
      .reverse()
      .map((r) => message(r[0], r[1]));
    return { messages, has_more };
  },

  unfinishedMessages(sql: Sql, scope?: TurnScope): Array<{ owner: Owner; message: StoredMessage }> {
    return turnRows(sql, "status = 'streaming' AND role = 'assistant'", scope);
  },

  waitingTurns(sql: Sql, scope?: TurnScope): Array<{ owner: Owner; message: StoredMessage }> {
    return turnRows(sql, "status = 'waiting'", scope, " ORDER BY owner, chat_id, thread_key, ts, message_id");
  },

  /**
   * Ends early once the frames read hold `LIMITS.storagePageBytes` (the Storage contract's bound).
   * With `types`, other frames are skipped on their type column, their payloads never read.
   */
  readOutbox(sql: Sql, owner: Owner, after: Seq, limit: number, types?: readonly string[]): OutboxEntry[] {
    const { rows } = sql.allWithin(
      outboxPageSql(types),
      [owner, after, ...(types ?? []), Number.isFinite(limit) ? Math.max(0, Math.floor(limit)) : -1],
      LIMITS.storagePageBytes,
      (r) => (r[3] as string).length,
    );
    return rows.map((r) => ({
      type: r[2] as string,
      payload: JSON.parse(r[3] as string) as Record<string, unknown>,
      seq: r[0] as number,
      ts: r[1] as number,
    }));
  },

  outboxBounds(sql: Sql, owner: Owner): OutboxBounds {
    const last = lastSeq(sql, owner);
    // An owner that never had a frame stored (a new owner's first hellos) has no row to look for,
    // and min() costs five point reads in sql.js (bench/NOTES.md).
    if (last === 0) return { first: 1, last: 0 };
    const first = sql.get("SELECT min(seq) FROM outbox WHERE owner = ?", [owner])?.[0] as number | null | undefined;
    return { first: first ?? last + 1, last };
  },

  getDevice(sql: Sql, owner: Owner, deviceId: string): Device | undefined {
    const row = sql.get("SELECT data FROM devices WHERE owner = ? AND device_id = ?", [owner, deviceId]);
    return row && (JSON.parse(row[0] as string) as Device);
  },

  listDevices(sql: Sql, owner: Owner): Device[] {
    return sql
      .all("SELECT data FROM devices WHERE owner = ?", [owner])
      .map((r) => JSON.parse(r[0] as string) as Device);
  },

  getMedia(sql: Sql, owner: Owner, mediaId: string): MediaRecord | undefined {
    const row = sql.get("SELECT data FROM media WHERE owner = ? AND media_id = ?", [owner, mediaId]);
    return row && (JSON.parse(row[0] as string) as MediaRecord);
  },
};
