import type { Sql } from "./sql.js";

/**
 * Messages per full-text shard: message row `id` n is indexed in shard `floor(n / SHARD_DOCS)`.
 *
 * FTS4 keeps its index as segments in levels and merges 16 segments of a level into one of the
 * next inside the write that adds the 16th. In one table of a million messages the top merge
 * rewrites the whole index, about 5 s on the event loop in a single write. A shard stops growing
 * at 32,768 messages, so with one message per write it holds at most eight level-2 segments
 * (4,096 messages each) and never reaches a level-3 merge: the largest merge any write can meet
 * is one of 4,096 messages (about 30 ms, once every 4,096 writes). Search walks the shards newest
 * first until it has the newest 1,000 matches (see `search`): one shard for a common word, about
 * eight for a common word in one chat of fifty; a rare word visits every shard, about 0.13 ms each.
 */
export const SHARD_DOCS = 32_768;

const PREFIX = "messages_fts_";

/** The FTS4 table holding the index entry of message row `id`. */
export function shardTable(id: number): string {
  return `${PREFIX}${Math.floor(id / SHARD_DOCS)}`;
}

/** The shard tables that exist, newest (highest ids) first. */
export function shardsNewestFirst(sql: Sql): string[] {
  return sql
    .all("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ? AND sql LIKE 'CREATE VIRTUAL TABLE%'", [
      `${PREFIX}[0-9]*`,
    ])
    .map(([name]) => name as string)
    .sort((a, b) => Number(b.slice(PREFIX.length)) - Number(a.slice(PREFIX.length)));
}

// sqlite_master is read rather than cached: it has a few rows per shard, a lookup costs
// microseconds, and a cache would have to follow rollbacks of the write that created a shard.
function exists(sql: Sql, table: string): boolean {
  return sql.get("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]) !== undefined;
}

/** Indexes a message row, creating its shard on first use. The caller holds the transaction. */
export function indexMessage(sql: Sql, id: number, text: string, lane: string): void {
  const table = shardTable(id);
  if (!exists(sql, table)) createShard(sql, table);
  sql.run(`INSERT INTO ${table} (docid, text, lane) VALUES (?, ?, ?)`, [id, text, lane]);
}

/**
 * Removes a message row's index entry. With external content, FTS4 reads the row's current text
 * to know what to remove, so this comes before the row is changed or deleted.
 */
export function unindexMessage(sql: Sql, id: number): void {
  const table = shardTable(id);
  if (exists(sql, table)) sql.run(`DELETE FROM ${table} WHERE docid = ?`, [id]);
}

/**
 * One shard: FTS4 over the `messages` table (external content, so the text is stored once), with
 * the `lane` column holding chat and thread tokens so a scope is matched inside the index.
 * `order=DESC` stores doclists newest first, so a search walks the newest matches and stops early.
 */
function createShard(sql: Sql, table: string): void {
  sql.run(
    `CREATE VIRTUAL TABLE ${table} USING fts4 (content="messages", text, lane, tokenize=unicode61 "remove_diacritics=1", order=DESC)`,
  );
}

/** Indexes every message row into its shard; used by the schema migration that introduced shards. */
export function indexAll(sql: Sql): void {
  const max = (sql.get("SELECT max(id) FROM messages")![0] as number | null) ?? 0;
  for (let shard = 0; shard * SHARD_DOCS <= max; shard++) {
    const from = shard * SHARD_DOCS;
    if (!sql.get("SELECT 1 FROM messages WHERE id >= ? AND id < ? LIMIT 1", [from, from + SHARD_DOCS])) continue;
    const table = `${PREFIX}${shard}`;
    createShard(sql, table);
    sql.run(`INSERT INTO ${table} (docid, text, lane) SELECT id, text, lane FROM messages WHERE id >= ? AND id < ?`, [
      from,
      from + SHARD_DOCS,
    ]);
  }
}
