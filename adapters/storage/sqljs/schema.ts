import { indexAll } from "./fts-shards.js";
import { HOOKS_MIGRATION } from "./hooks.js";
import { ACTION_TOKENS_MIGRATION } from "./action-tokens.js";
import { DUE_PUSHES_MIGRATION } from "./due-pushes.js";
import { FENCES_MIGRATION } from "./fences.js";
import { SCHEDULES_MIGRATION } from "./schedules.js";
import { legacyRedactKey } from "./legacy-keys.js";
import { READ_MARKS_MIGRATION } from "./read-marks.js";
import type { Sql } from "./sql.js";
import { SchemaTooNewError } from "./schema-error.js";

/** SQL to run, or a step that needs code (a loop over rows, say). */
export type Migration = string | ((sql: Sql) => void);

/**
 * Forward migrations: entry `i` takes a database from version `i` to `i + 1`. Append only; never
 * change a released entry, since databases in the field have already run it.
 */
export const MIGRATIONS: Migration[] = [
  `
  CREATE TABLE channels (
    owner TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (owner, chat_id)
  ) WITHOUT ROWID;

  -- thread_key is '' in a flat lane: an empty string compares with = and indexes plainly, NULL does not.
  -- data holds the message as JSON without text, which lives once in its own column for FTS.
  CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    message_id TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    thread_key TEXT NOT NULL,
    ts INTEGER NOT NULL,
    role TEXT NOT NULL,
    status TEXT,
    client_msg_id TEXT,
    text TEXT NOT NULL,
    lane TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE UNIQUE INDEX messages_by_id ON messages (owner, message_id);
  CREATE INDEX messages_by_lane ON messages (owner, chat_id, thread_key, ts, message_id);
  CREATE INDEX messages_by_thread ON messages (owner, thread_key) WHERE thread_key <> '';
  CREATE INDEX messages_by_client_id ON messages (owner, client_msg_id) WHERE client_msg_id IS NOT NULL;
  CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';

  -- order=DESC: search walks matches newest first and stops early; with ascending doclists FTS4
  -- would load every match of a common word first. lane holds a token for the chat and one for the
  -- thread (see laneColumn), so a chat or thread scope is a doclist intersection inside FTS4.
  CREATE VIRTUAL TABLE messages_fts USING fts4 (content="messages", text, lane, tokenize=unicode61 "remove_diacritics=1", order=DESC);

  CREATE TABLE outbox (
    owner TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (owner, seq)
  ) WITHOUT ROWID;
  CREATE INDEX outbox_by_ts ON outbox (owner, ts);
  CREATE TABLE outbox_last (owner TEXT PRIMARY KEY, last INTEGER NOT NULL) WITHOUT ROWID;

  CREATE TABLE devices (
    owner TEXT NOT NULL,
    device_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (owner, device_id)
  ) WITHOUT ROWID;

  CREATE TABLE media (
    owner TEXT NOT NULL,
    media_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (owner, media_id)
  ) WITHOUT ROWID;
  `,
  // 2: the full-text index split in shards of message rows (see fts-shards.ts), so no single write
  // has to merge the index of the whole history.
  (sql) => {
    sql.run("DROP TABLE messages_fts");
    indexAll(sql);
  },
  // 3: each outbox frame carries the key of what it shows (OutboxFrame.redactKey), so deleting a
  // message or channel redacts its frames with an indexed update instead of a scan.
  (sql) => {
    sql.run("ALTER TABLE outbox ADD COLUMN redact_key TEXT");
    sql.run("CREATE INDEX outbox_by_redact_key ON outbox (owner, redact_key) WHERE redact_key IS NOT NULL");
    for (const [owner, seq, type, payload] of sql.all("SELECT owner, seq, type, payload FROM outbox")) {
      const key = legacyRedactKey(type as string, JSON.parse(payload as string) as Record<string, unknown>);
      if (key !== null) sql.run("UPDATE outbox SET redact_key = ? WHERE owner = ? AND seq = ?", [key, owner, seq]);
    }
  },
  // 4: the durable turn queue: user messages whose turn has not ended carry status 'waiting', read
  // per lane each time a turn takes its lane (waitingTurns).
  (sql) => {
    sql.run(
      "CREATE INDEX messages_waiting ON messages (owner, chat_id, thread_key, ts, message_id) WHERE status = 'waiting'",
    );
  },
  // 5: a `picker.select` id is looked up among the owner's picker frames through this index, never
  // by walking the outbox from a seq the client chose (readOutbox with `types`).
  (sql) => {
    sql.run("CREATE INDEX outbox_by_type ON outbox (owner, type, seq)");
  },
  // 6: webhooks (docs/PROTOCOL.md §17), see hooks.ts.
  HOOKS_MIGRATION,
  // 7: read state (docs/PROTOCOL.md §15), see read-marks.ts.
  READ_MARKS_MIGRATION,
  // 8: schedules (docs/PROTOCOL.md §17), see schedules.ts.
  SCHEDULES_MIGRATION,
  // 9: lane fencing tokens (docs/PROTOCOL.md §4.2), see fences.ts.
  FENCES_MIGRATION,
  // 10: action tokens (docs/PROTOCOL.md §21), see action-tokens.ts.
  ACTION_TOKENS_MIGRATION,
  // 11: waiting pushes (docs/PROTOCOL.md §21.6), see due-pushes.ts.
  DUE_PUSHES_MIGRATION,
];

/** The schema version this code writes; stored in `PRAGMA user_version`. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings a database to {@link SCHEMA_VERSION}, refusing one from a newer version; returns how
 * many versions it moved forward.
 */
export function migrate(sql: Sql, target = SCHEMA_VERSION, migrations = MIGRATIONS): number {
  const found = Number(sql.get("PRAGMA user_version")![0]);
  if (found > target) throw new SchemaTooNewError(found, target);
  for (let v = found; v < target; v++) {
    const step = migrations[v];
    // Each step commits with its version number, so a failure leaves the last whole version.
    sql.transaction(() => {
      if (typeof step === "string") sql.db.exec(step);
      else step(sql);
      sql.db.exec(`PRAGMA user_version = ${v + 1}`);
    });
  }
  return Math.max(0, target - found);
}
