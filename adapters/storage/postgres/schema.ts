import type { PoolClient } from "pg";
import { FENCES_MIGRATION } from "./fences.js";
import { fillMessageSearch, refoldWords } from "./search-migrate.js";

/** Migration 14: action tokens by hash, and by ask for retraction (see action-tokens.ts). */
export const ACTION_TOKENS_MIGRATION = (s: string): string => `
    CREATE TABLE ${s}.action_tokens (
      hash text COLLATE "C" PRIMARY KEY,
      owner text NOT NULL,
      picker_id text NOT NULL,
      option_id text NOT NULL,
      device_id text NOT NULL,
      target text NOT NULL,
      expires_at bigint NOT NULL,
      outcome text
    );
    CREATE INDEX action_tokens_by_ask ON ${s}.action_tokens (owner, picker_id);`;

/** Migration 15: waiting pushes by owner and key, and by due time for claims (see due-pushes.ts). */
export const DUE_PUSHES_MIGRATION = (s: string): string => `
    CREATE TABLE ${s}.due_pushes (
      owner text NOT NULL,
      key text COLLATE "C" NOT NULL,
      payload text NOT NULL,
      due_at bigint NOT NULL,
      PRIMARY KEY (owner, key)
    );
    CREATE INDEX due_pushes_by_time ON ${s}.due_pushes (due_at);`;

/**
 * The schema, one entry per version. A database at version N gets every later entry applied in
 * order, each in the transaction that records it, so a crash mid-migration leaves the older
 * version intact. Never edit a released entry: add a new one.
 */
export const MIGRATIONS: ReadonlyArray<(s: string) => string> = [
  (s) => `
    CREATE TABLE ${s}.owners (
      owner text PRIMARY KEY,
      -- The highest seq ever given; the row lock taken by UPDATE serialises writers of one owner.
      last_seq bigint NOT NULL DEFAULT 0
    );
    CREATE TABLE ${s}.channels (
      owner text NOT NULL,
      chat_id text NOT NULL,
      data text NOT NULL,
      PRIMARY KEY (owner, chat_id)
    );
    CREATE TABLE ${s}.messages (
      owner text NOT NULL,
      message_id text COLLATE "C" NOT NULL,
      chat_id text NOT NULL,
      -- '' for the flat lane, so the lane index has no NULLs.
      thread_key text NOT NULL,
      role text NOT NULL,
      status text,
      ts bigint NOT NULL,
      client_msg_id text,
      text text NOT NULL,
      words tsvector NOT NULL,
      data text NOT NULL,
      PRIMARY KEY (owner, message_id)
    );
    CREATE INDEX messages_lane ON ${s}.messages (owner, chat_id, thread_key, ts, message_id);
    CREATE INDEX messages_thread ON ${s}.messages (owner, thread_key) WHERE thread_key <> '';
    -- Two processes storing one retry: the second insert fails and the gateway answers with the first.
    CREATE UNIQUE INDEX messages_client_msg ON ${s}.messages (owner, chat_id, client_msg_id) WHERE client_msg_id IS NOT NULL;
    CREATE INDEX messages_streaming ON ${s}.messages (owner) WHERE status = 'streaming' AND role = 'assistant';
    CREATE INDEX messages_words ON ${s}.messages USING GIN (words);
    CREATE TABLE ${s}.outbox (
      owner text NOT NULL,
      seq bigint NOT NULL,
      type text NOT NULL,
      payload text NOT NULL,
      ts bigint NOT NULL,
      PRIMARY KEY (owner, seq)
    );
    CREATE TABLE ${s}.devices (
      owner text NOT NULL,
      device_id text NOT NULL,
      data text NOT NULL,
      PRIMARY KEY (owner, device_id)
    );
    CREATE TABLE ${s}.media (
      owner text NOT NULL,
      media_id text NOT NULL,
      data text NOT NULL,
      PRIMARY KEY (owner, media_id)
    );`,
  // 2: each outbox frame carries the key of what it shows (OutboxFrame.redactKey in chat-gateway), so
  // deleting a message or channel redacts its frames with an indexed update; older rows backfilled.
  (s) => `
    ALTER TABLE ${s}.outbox ADD COLUMN redact_key text;
    UPDATE ${s}.outbox SET redact_key = CASE
      WHEN json_typeof(payload::json -> 'message_id') = 'string' THEN 'm:' || (payload::json ->> 'message_id')
      WHEN type NOT IN ('channel.created', 'channel.renamed', 'notification') THEN NULL
      WHEN json_typeof(payload::json -> 'thread_id') = 'string' THEN 'c:' || (payload::json ->> 'thread_id')
      WHEN json_typeof(payload::json -> 'chat_id') = 'string' THEN 'c:' || (payload::json ->> 'chat_id')
    END;
    CREATE INDEX outbox_redact ON ${s}.outbox (owner, redact_key) WHERE redact_key IS NOT NULL;`,
  // 3: search at any history size. A common word is found by walking `messages_recent`
  // newest first until enough matches, not by collecting all its matches from GIN and sorting them.
  // A chat or thread scope asks GIN for lexemes qualified by the scope's lane token (`lanes`, see
  // `laneToken` in search.ts), computed here for the existing rows from their words: in lexeme
  // order while they fit in 240 KB per lane (new rows: text order, 512 KB in all), so that no
  // tsvector passes its 1 MB limit. A small pending list bounds the not yet merged GIN entries
  // every search scans (the default is 4 MB). The GIN index on words is built anew after the
  // rewrite of every row, much faster than updating it row by row.
  (s) => `
    SET LOCAL maintenance_work_mem = '256MB';
    DROP INDEX ${s}.messages_words;
    ALTER TABLE ${s}.messages ADD COLUMN lanes tsvector NOT NULL DEFAULT '';
    UPDATE ${s}.messages m SET lanes = coalesce((
      SELECT array_to_tsvector(array_agg(lane.token || w.lexeme))
      FROM (
        SELECT lexeme, sum(octet_length(lexeme) + 23) OVER (ORDER BY n) AS upto
        FROM unnest(tsvector_to_array(m.words)) WITH ORDINALITY AS u(lexeme, n)
      ) w,
      unnest(ARRAY['#c' || left(md5(convert_to(m.chat_id, 'UTF8')), 12) || ':']
        || CASE WHEN m.thread_key <> '' THEN ARRAY['#t' || left(md5(convert_to(m.thread_key, 'UTF8')), 12) || ':'] ELSE '{}'::text[] END) AS lane(token)
      WHERE w.upto <= 240 * 1024
    ), '');
    CREATE INDEX messages_words ON ${s}.messages USING GIN (words) WITH (gin_pending_list_limit = 64);
    CREATE INDEX messages_lanes ON ${s}.messages USING GIN (lanes) WITH (gin_pending_list_limit = 64);
    CREATE INDEX messages_recent ON ${s}.messages (owner, ts, message_id);`,
  // 4: a chat or thread where most messages have a common word is searched by walking its newest
  // messages (`walkQuery` in search.ts), not by reading all its matches from GIN. The thread index
  // replaces `messages_thread`, of which it is an extension.
  (s) => `
    CREATE INDEX messages_chat_recent ON ${s}.messages (owner, chat_id, ts, message_id);
    CREATE INDEX messages_thread_recent ON ${s}.messages (owner, thread_key, ts, message_id) WHERE thread_key <> '';
    DROP INDEX ${s}.messages_thread;`,
  // 5: search reads a narrow table of its own, one row per message (`fillMessageSearch` fills it
  // from the existing messages, then moves `words`, `messages_words` and `messages_recent` here):
  // the all-chats newest-first walk reads about ten rows per 8 kB page instead of four, and
  // `folded` lets SQL rank without the texts (`rankQuery` in search-rank.ts). A message's search
  // row goes with it: deleted, or moved to another owner, by the foreign key's cascade.
  (s) => `
    CREATE TABLE ${s}.message_search (
      owner text NOT NULL,
      message_id text COLLATE "C" NOT NULL,
      ts bigint NOT NULL,
      words tsvector NOT NULL,
      folded text NOT NULL,
      PRIMARY KEY (owner, message_id)
    );`,
  // 6: a combining mark is part of its word (Hindi, pointed Hebrew, decomposed accents), so texts
  // that are not all ASCII get their search columns cut anew by `refoldWords`. Nothing in SQL.
  () => "",
  // 7: the durable turn queue: user messages whose turn has not ended carry status 'waiting', read
  // per lane each time a turn takes its lane (waitingTurns).
  (s) =>
    `CREATE INDEX messages_waiting ON ${s}.messages (owner, chat_id, thread_key, ts, message_id) WHERE status = 'waiting';`,
  // 8: at most one default channel per owner, whatever process writes (docs/PROTOCOL.md §3). Owners
  // that concurrent `channel.set_default`s left with several keep one: the channel of kind
  // `default` if it is among them, else the first by chat_id.
  (s) => `
    WITH ranked AS (
      SELECT owner, chat_id, row_number() OVER (PARTITION BY owner ORDER BY chat_id <> 'default', chat_id) AS n
      FROM ${s}.channels WHERE (data::jsonb ->> 'is_default') = 'true')
    UPDATE ${s}.channels c SET data = jsonb_set(c.data::jsonb, '{is_default}', 'false')::text
    FROM ranked r WHERE c.owner = r.owner AND c.chat_id = r.chat_id AND r.n > 1;
    CREATE UNIQUE INDEX channels_one_default ON ${s}.channels (owner) WHERE (data::jsonb ->> 'is_default') = 'true';`,
  // 9: a `picker.select` id is looked up among the owner's picker frames through this index, never
  // by walking the outbox from a seq the client chose (readOutbox with `types`).
  (s) => `CREATE INDEX outbox_type ON ${s}.outbox (owner, type, seq);`,
  // 10: webhooks (docs/PROTOCOL.md §17). The secret is kept as given: the gateway computes each
  // post's HMAC with it, so it cannot be hashed. A hook's delivery keys go with it (cascade).
  (s) => `
    CREATE TABLE ${s}.hooks (
      hook_id text COLLATE "C" PRIMARY KEY,
      owner text NOT NULL,
      name text NOT NULL,
      data text NOT NULL,
      UNIQUE (owner, name)
    );
    CREATE TABLE ${s}.hook_keys (
      hook_id text COLLATE "C" NOT NULL REFERENCES ${s}.hooks (hook_id) ON DELETE CASCADE,
      key text COLLATE "C" NOT NULL,
      expires_at bigint NOT NULL,
      message_id text,
      PRIMARY KEY (hook_id, key)
    );`,
  // 11: read state (docs/PROTOCOL.md §15), see read-marks.ts: one watermark row per owner and lane,
  // and an index of assistant messages per lane in (ts, message_id) order, so an unread count walks
  // only the unread answers (at most the cap).
  (s) => `
    CREATE TABLE ${s}.read_marks (
      owner text NOT NULL,
      chat_id text NOT NULL,
      thread_key text NOT NULL,
      ts bigint NOT NULL,
      message_id text COLLATE "C" NOT NULL,
      PRIMARY KEY (owner, chat_id, thread_key)
    );
    CREATE INDEX messages_assistant ON ${s}.messages (owner, chat_id, thread_key, ts, message_id) WHERE role = 'assistant';`,
  // 12: schedules (docs/PROTOCOL.md §17). `last_slot` is claimed by a conditional UPDATE (each slot
  // runs once across processes); `run_key` is what the latest run is compared on when replaced.
  (s) => `
    CREATE TABLE ${s}.schedules (
      schedule_id text COLLATE "C" PRIMARY KEY,
      owner text NOT NULL,
      name text NOT NULL,
      data text NOT NULL,
      last_slot bigint NOT NULL,
      run text,
      run_key text NOT NULL DEFAULT '',
      UNIQUE (owner, name)
    );`,
  // 13: lane fencing tokens (docs/PROTOCOL.md §4.2), see fences.ts.
  FENCES_MIGRATION,
  // 14: action tokens (docs/PROTOCOL.md §21), see action-tokens.ts.
  ACTION_TOKENS_MIGRATION,
  // 15: waiting pushes (docs/PROTOCOL.md §21.6), see due-pushes.ts.
  DUE_PUSHES_MIGRATION,
];

/** What a migration does after its SQL, in the same transaction: work SQL alone cannot do. */
export const FOLLOW_UPS: Readonly<Partial<Record<number, (client: PoolClient, s: string) => Promise<void>>>> = {
  5: fillMessageSearch,
  6: refoldWords,
};

/** The version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Creates the schema or brings it up to {@link SCHEMA_VERSION}. An advisory lock keyed by the
 * schema name makes processes that start together take turns; the later ones find nothing to do.
 * A database newer than this code is refused rather than written with an older layout.
 */
export async function migrate(client: PoolClient, schema: string): Promise<void> {
  const s = `"${schema}"`;
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`chat-gateway:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.schema_version`);
    const current = rows[0]?.v ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(
        `postgresStorage: schema "${schema}" is at version ${current}, newer than this chat-gateway (${SCHEMA_VERSION}); upgrade the package`,
      );
    }
    for (let v = current + 1; v <= SCHEMA_VERSION; v++) {
      const statements = MIGRATIONS[v - 1](s);
      if (statements) await client.query(statements);
      await FOLLOW_UPS[v]?.(client, s);
      await client.query(`INSERT INTO ${s}.schema_version (version) VALUES ($1)`, [v]);
    }
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
