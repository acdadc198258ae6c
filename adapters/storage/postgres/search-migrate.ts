/**
 * The part of the version 5 migration that SQL cannot do: each existing message's `folded`
 * column, which is cut and folded in JS exactly as the other storages cut and fold.
 * @module
 */
import type { PoolClient } from "pg";
import { foldedWords } from "./search.js";

/** Messages read and written per round trip while filling `message_search`. */
const BATCH = 5000;

/**
 * Fills `message_search` from `messages` (inside the migration's transaction), then indexes it,
 * links it to `messages` and drops what search no longer reads from there. The words are copied
 * as stored; `folded` is computed from the text. Indexes and the foreign key come after the fill:
 * building them once is much faster than updating them row by row.
 */
export async function fillMessageSearch(client: PoolClient, s: string): Promise<void> {
  await client.query(`DECLARE message_texts NO SCROLL CURSOR FOR SELECT owner, message_id, text FROM ${s}.messages`);
  for (;;) {
    const { rows } = await client.query<{ owner: string; message_id: string; text: string }>(`FETCH ${BATCH} FROM message_texts`);
    if (!rows.length) break;
    await client.query(
      `INSERT INTO ${s}.message_search (owner, message_id, ts, words, folded)
       SELECT m.owner, m.message_id, m.ts, m.words, u.folded FROM unnest($1::text[], $2::text[], $3::text[]) AS u(owner, message_id, folded)
       JOIN ${s}.messages m ON m.owner = u.owner AND m.message_id = u.message_id`,
      [rows.map((r) => r.owner), rows.map((r) => r.message_id), rows.map((r) => foldedWords(r.text))],
    );
  }
  await client.query("CLOSE message_texts");
  await client.query(`
    SET LOCAL maintenance_work_mem = '256MB';
    ALTER TABLE ${s}.message_search ADD FOREIGN KEY (owner, message_id) REFERENCES ${s}.messages (owner, message_id) ON DELETE CASCADE ON UPDATE CASCADE;
    DROP INDEX ${s}.messages_recent;
    ALTER TABLE ${s}.messages DROP COLUMN words;
    CREATE INDEX messages_recent ON ${s}.message_search (owner, ts, message_id);
    CREATE INDEX messages_words ON ${s}.message_search USING GIN (words) WITH (gin_pending_list_limit = 64);
    ANALYZE ${s}.message_search;`);
}
