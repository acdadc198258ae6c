import type { AdoptedCounts, AdoptionRefused, MediaRecord, Owner } from "chat-gateway";
import { lastSeq } from "./seq.js";
import { indexMessage, unindexMessage } from "./fts-shards.js";
import { laneColumn } from "./search.js";
import type { Sql } from "./sql.js";

/** The tables keyed by owner whose rows move as they are. */
const PLAIN = ["channels", "outbox", "devices"] as const;

/** Whether the owner holds any record (its seq counter aside). */
function holds(sql: Sql, owner: Owner): boolean {
  return ["channels", "messages", "outbox", "devices", "media"].some((table) => sql.get(`SELECT 1 FROM ${table} WHERE owner = ? LIMIT 1`, [owner]) !== undefined);
}

function count(sql: Sql, table: string, owner: Owner, where = ""): number {
  return sql.get(`SELECT count(*) FROM ${table} WHERE owner = ?${where}`, [owner])![0] as number;
}

/**
 * Moves every record of `from` to `to` (see `StorageImplementation.adoptOwner`); the caller holds
 * the transaction, so a crash leaves nothing half moved; a refusal moves nothing.
 */
export function adopt(sql: Sql, from: Owner, to: Owner): AdoptedCounts | AdoptionRefused {
  if (!holds(sql, from)) return { channels: 0, messages: 0, outbox: 0, devices: 0, media: 0 };
  if (lastSeq(sql, to) > 0 || holds(sql, to)) return { refused: "target_has_data" };
  for (const table of PLAIN) sql.run(`UPDATE ${table} SET owner = ? WHERE owner = ?`, [to, from]);
  // The full-text lane tokens hash the owner in (see laneColumn): each message is indexed anew.
  for (const [id, chatId, threadKey, text] of sql.all("SELECT id, chat_id, thread_key, text FROM messages WHERE owner = ?", [from])) {
    const lane = laneColumn(to, chatId as string, threadKey === "" ? null : (threadKey as string));
    unindexMessage(sql, id as number);
    sql.run("UPDATE messages SET owner = ?, lane = ? WHERE id = ?", [to, lane, id as number]);
    indexMessage(sql, id as number, text as string, lane);
  }
  // A media record names its owner inside its JSON too.
  for (const [mediaId, data] of sql.all("SELECT media_id, data FROM media WHERE owner = ?", [from])) {
    const record = { ...(JSON.parse(data as string) as MediaRecord), owner: to };
    sql.run("UPDATE media SET owner = ?, data = ? WHERE owner = ? AND media_id = ?", [to, JSON.stringify(record), from, mediaId as string]);
  }
  // `from` keeps its counter: seqs are never reused, also by an owner that starts over.
  sql.run("INSERT OR REPLACE INTO outbox_last (owner, last) VALUES (?, ?)", [to, lastSeq(sql, from)]);
  return {
    channels: count(sql, "channels", to),
    messages: count(sql, "messages", to),
    outbox: count(sql, "outbox", to, " AND type <> ''"),
    devices: count(sql, "devices", to),
    media: count(sql, "media", to),
  };
}
