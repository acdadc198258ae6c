/**
 * The parts of migrations that SQL cannot do: search columns cut and folded in JS exactly as the
 * other storages cut and fold (version 5 fills `folded`; version 6 cuts words anew where a
 * combining mark used to split one).
 * @module
 */
import type { PoolClient } from "pg";
import { foldedWords, tsvectorText } from "./search.js";

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
    const { rows } = await client.query<{ owner: string; message_id: string; text: string }>(
      `FETCH ${BATCH} FROM message_texts`,
    );
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

/**
 * Version 6: a combining mark no longer splits a word (`WORD_PATTERN` in chat-gateway), so the
 * `words`, `folded` and `lanes` of every message whose text is not all ASCII are computed anew
 * (those of ASCII texts cannot change) and written where they differ. The indexes are kept: only
 * texts with marks or a dotted capital I change, a small share of a history in most languages.
 */
export async function refoldWords(client: PoolClient, s: string): Promise<void> {
  await client.query(
    `DECLARE refold NO SCROLL CURSOR FOR SELECT owner, message_id, chat_id, thread_key, text FROM ${s}.messages WHERE octet_length(text) <> char_length(text)`,
  );
  for (;;) {
    const { rows } = await client.query<{
      owner: string;
      message_id: string;
      chat_id: string;
      thread_key: string;
      text: string;
    }>(`FETCH ${BATCH} FROM refold`);
    if (!rows.length) break;
    const vectors = rows.map((r) => tsvectorText(r.text, r.chat_id, r.thread_key || null));
    const keys = [rows.map((r) => r.owner), rows.map((r) => r.message_id)];
    await client.query(
      `UPDATE ${s}.message_search x SET words = u.words::tsvector, folded = u.folded FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(owner, message_id, words, folded)
       WHERE x.owner = u.owner AND x.message_id = u.message_id AND (x.folded <> u.folded OR x.words <> u.words::tsvector)`,
      [...keys, vectors.map((v) => v.words), rows.map((r) => foldedWords(r.text))],
    );
    await client.query(
      `UPDATE ${s}.messages m SET lanes = u.lanes::tsvector FROM unnest($1::text[], $2::text[], $3::text[]) AS u(owner, message_id, lanes)
       WHERE m.owner = u.owner AND m.message_id = u.message_id AND m.lanes <> u.lanes::tsvector`,
      [...keys, vectors.map((v) => v.lanes)],
    );
  }
  await client.query("CLOSE refold");
}
