import type { MediaRecord, Owner } from "chat-gateway";
import type { AdoptedCounts, AdoptionRefused } from "chat-gateway/storage";
import { lastSeq } from "./seq.js";
import { indexMessage, unindexMessage } from "./fts-shards.js";
import { laneColumn } from "./search.js";
import type { Sql } from "./sql.js";

/**
 * The tables keyed by owner whose rows move as they are: hooks and schedules go with the channels
 * they post into. Devices never move (see `adopt`).
 */
const PLAIN = ["channels", "outbox", "hooks", "schedules", "read_marks", "lane_fences"] as const;
const HISTORY = ["channels", "messages", "outbox", "media"];

/** Whether the owner holds any record of `tables` (its seq counter aside). */
function holds(sql: Sql, owner: Owner, tables = [...HISTORY, "devices"]): boolean {
  return tables.some((table) => sql.get(`SELECT 1 FROM ${table} WHERE owner = ? LIMIT 1`, [owner]) !== undefined);
}

function count(sql: Sql, table: string, owner: Owner, where = ""): number {
  return sql.get(`SELECT count(*) FROM ${table} WHERE owner = ?${where}`, [owner])![0] as number;
}

/**
 * Moves the history of `from` to `to` (see `StorageImplementation.adoptOwner`); the caller holds
 * the transaction, so a crash leaves nothing half moved; a refusal moves nothing. Devices and
 * their push targets stay with `from`: whoever registered them while login was off must not get
 * `to`'s pushes.
 */
export function adopt(sql: Sql, from: Owner, to: Owner): AdoptedCounts | AdoptionRefused {
  if (!holds(sql, from, HISTORY)) return { channels: 0, messages: 0, outbox: 0, media: 0 };
  if (lastSeq(sql, to) > 0 || holds(sql, to)) return { refused: "target_has_data" };
  for (const table of PLAIN) sql.run(`UPDATE ${table} SET owner = ? WHERE owner = ?`, [to, from]);
  // The full-text lane tokens hash the owner in (see laneColumn): each message is indexed anew.
  for (const [id, chatId, threadKey, text] of sql.all(
    "SELECT id, chat_id, thread_key, text FROM messages WHERE owner = ?",
    [from],
  )) {
    const lane = laneColumn(to, chatId as string, threadKey === "" ? null : (threadKey as string));
    unindexMessage(sql, id as number);
    sql.run("UPDATE messages SET owner = ?, lane = ? WHERE id = ?", [to, lane, id as number]);
    indexMessage(sql, id as number, text as string, lane);
  }
  // A media record names its owner inside its JSON too.
  for (const [mediaId, data] of sql.all("SELECT media_id, data FROM media WHERE owner = ?", [from])) {
    const record = { ...(JSON.parse(data as string) as MediaRecord), owner: to };
    sql.run("UPDATE media SET owner = ?, data = ? WHERE owner = ? AND media_id = ?", [
      to,
      JSON.stringify(record),
      from,
      mediaId as string,
    ]);
  }
  // `from` keeps its counter: seqs are never reused, also by an owner that starts over.
  sql.run("INSERT OR REPLACE INTO outbox_last (owner, last) VALUES (?, ?)", [to, lastSeq(sql, from)]);
  return {
    channels: count(sql, "channels", to),
    messages: count(sql, "messages", to),
    outbox: count(sql, "outbox", to, " AND type <> ''"),
    media: count(sql, "media", to),
  };
}
