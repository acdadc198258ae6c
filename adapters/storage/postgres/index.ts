/**
 * PostgreSQL {@link Storage}: everything durable on a database that several gateway processes
 * share. The adapter creates and migrates its own tables (versioned, in one schema), gives each
 * owner's outbox `seq` numbers without gaps or repeats however many processes write, and searches
 * with PostgreSQL's text search (a GIN-indexed `tsvector`).
 *
 * ```ts
 * import { postgresStorage } from "chat-gateway/storage/postgres";
 * const storage = postgresStorage({ connectionString: process.env.DATABASE_URL });
 * ```
 *
 * Needs the optional peer dependency `pg`.
 * @module
 */
import type { Pool } from "pg";
import { defineStorage } from "chat-gateway/storage";
import type { HookStore, ScheduleStore, Storage } from "chat-gateway/storage";
import { adoptOwner } from "./adopt.js";
import { postgresHooks } from "./hooks.js";
import { postgresActionTokens } from "./action-tokens.js";
import { postgresDuePushes } from "./due-pushes.js";
import { postgresSchedules } from "./schedules.js";
import { database } from "./database.js";
import { queries } from "./queries.js";
import { postgresReadMarks } from "./read-marks.js";
import { postgresSearch } from "./search-plan.js";
import { refusingBadText } from "./text-guard.js";
import { writer } from "./writer.js";

/**
 * A `pg` pool, as the storage's options take it: any `new pg.Pool(…)` fits. Declared here instead of
 * imported from `pg`, so the package's types check without `@types/pg` installed.
 */
export interface PostgresPool {
  connect(): Promise<unknown>;
  end(): Promise<void>;
}

/** Options of {@link postgresStorage}. Give `pool` or `connectionString`. */
export interface PostgresStorageOptions {
  /** A `pg` pool of your own. The storage never ends it; `close()` leaves it to you. */
  pool?: PostgresPool;
  /** `postgres://…` URL; the storage makes its own pool and ends it on `close()`. */
  connectionString?: string;
  /** Connections of the storage's own pool (default 10). */
  poolSize?: number;
  /** Schema holding the tables, created when missing (default `public`). Letters, digits and `_`. */
  schema?: string;
  /** Clock for the `ts` of outbox entries, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /**
   * Run search statements as named prepared statements, so that each connection plans them once
   * (default true). Turn it off behind a pooler that cannot carry prepared statements across its
   * server connections: PgBouncer before 1.21 in transaction or statement mode, or a later one
   * without `max_prepared_statements`.
   */
  preparedStatements?: boolean;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Creates a {@link Storage} on PostgreSQL. It is also the {@link HookStore} and
 * {@link ScheduleStore} of the same database, whose hooks and schedules `adoptOwner` moves with the
 * channels: `createGateway({ storage, hookStore: storage, scheduleStore: storage })`.
 *
 * Every `commit` is one transaction. The owner's counter row (`owners.last_seq`) is advanced with
 * `INSERT … ON CONFLICT DO UPDATE … RETURNING` inside it: the row lock it takes makes concurrent
 * writers of one owner, in any process, queue behind each other, and a rolled-back transaction
 * gives its numbers back, so `seq` has no gaps and no repeats. Within a process, one writer per
 * owner applies its commits in call order, as the contract requires; commits that arrive while a
 * transaction runs share the next one (each under a savepoint, so a bad one fails alone).
 *
 * @throws {TypeError} on a bad option
 */
export function postgresStorage(options: PostgresStorageOptions): Storage & HookStore & ScheduleStore {
  if (typeof options !== "object" || options === null)
    throw new TypeError("postgresStorage: options are required ({ pool } or { connectionString })");
  if (!options.pool && typeof options.connectionString !== "string") {
    throw new TypeError("postgresStorage: give options.pool (a pg Pool) or options.connectionString (postgres://…)");
  }
  if (options.pool && options.connectionString !== undefined)
    throw new TypeError("postgresStorage: give options.pool or options.connectionString, not both");
  const schema = options.schema ?? "public";
  if (!SCHEMA_NAME.test(schema))
    throw new TypeError(
      `postgresStorage: schema ${JSON.stringify(schema)} must be letters, digits and "_" (at most 63), not starting with a digit`,
    );
  const poolSize = options.poolSize ?? 10;
  if (!Number.isInteger(poolSize) || poolSize < 1)
    throw new TypeError("postgresStorage: poolSize must be a positive integer");
  if (options.now !== undefined && typeof options.now !== "function")
    throw new TypeError("postgresStorage: options.now must be a function returning epoch milliseconds");
  if (options.preparedStatements !== undefined && typeof options.preparedStatements !== "boolean")
    throw new TypeError("postgresStorage: options.preparedStatements must be a boolean");
  const db = database({
    pool: options.pool as Pool | undefined,
    connectionString: options.connectionString,
    poolSize,
    schema,
  });
  const writes = writer(db, options.now ?? Date.now);
  const search = postgresSearch(db.s, db.ready, options.preparedStatements ?? true);
  const storage = defineStorage(
    refusingBadText({
      // The unique index messages_client_msg refuses a second (chat, client_msg_id) in any process.
      capabilities: { uniqueClientMsgId: true, fencing: true },
      async open() {
        await db.ready();
      },
      async close() {
        await writes.settled();
        await db.close();
      },
      async ping() {
        await db.rows("SELECT 1", []);
      },
      commit: writes.commit,
      search: (owner, query) => search(owner, query),
      adoptOwner: adoptOwner(db),
      ...queries(db),
      ...postgresReadMarks(db),
      actionTokens: postgresActionTokens(db),
      duePushes: postgresDuePushes(db),
    }),
  );
  return Object.assign(storage, refusingBadText(postgresHooks(db)), refusingBadText(postgresSchedules(db)));
}
