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
import pg from "pg";
import type { Pool, PoolClient } from "pg";
import type {
  Change,
  Channel,
  CommitResult,
  Device,
  HistoryPage,
  HistoryQuery,
  MediaRecord,
  OutboxBounds,
  OutboxEntry,
  Owner,
  RetentionPolicy,
  SearchHit,
  SearchQuery,
  Seq,
  Storage,
  StoredMessage,
} from "chat-gateway";
import { defineStorage, outboxRedactionKey } from "chat-gateway";
import { attachMedia, dropMediaOf, messagesPresent, redactOutbox } from "./integrity.js";
import { migrate } from "./schema.js";
import { postgresSearch } from "./search-plan.js";
import { laneKey, lastByKey, prepareMessage } from "./rows.js";

/** Options of {@link postgresStorage}. Give `pool` or `connectionString`. */
export interface PostgresStorageOptions {
  /** A `pg` pool of your own. The storage never ends it; `close()` leaves it to you. */
  pool?: Pool;
  /** `postgres://…` URL; the storage makes its own pool and ends it on `close()`. */
  connectionString?: string;
  /** Connections of the storage's own pool (default 10). */
  poolSize?: number;
  /** Schema holding the tables, created when missing (default `public`). Letters, digits and `_`. */
  schema?: string;
  /** Clock for the `ts` of outbox entries, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Creates a {@link Storage} on PostgreSQL.
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
export function postgresStorage(options: PostgresStorageOptions): Storage {
  if (typeof options !== "object" || options === null) throw new TypeError("postgresStorage: options are required ({ pool } or { connectionString })");
  if (!options.pool && typeof options.connectionString !== "string") {
    throw new TypeError("postgresStorage: give options.pool (a pg Pool) or options.connectionString (postgres://…)");
  }
  if (options.pool && options.connectionString !== undefined) throw new TypeError("postgresStorage: give options.pool or options.connectionString, not both");
  const schema = options.schema ?? "public";
  if (!SCHEMA_NAME.test(schema)) throw new TypeError(`postgresStorage: schema ${JSON.stringify(schema)} must be letters, digits and "_" (at most 63), not starting with a digit`);
  const poolSize = options.poolSize ?? 10;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new TypeError("postgresStorage: poolSize must be a positive integer");
  if (options.now !== undefined && typeof options.now !== "function") throw new TypeError("postgresStorage: options.now must be a function returning epoch milliseconds");
  const now = options.now ?? Date.now;
  const s = `"${schema}"`;
  const ownPool = !options.pool;
  let pool: Pool | undefined = options.pool;
  let opened: Promise<void> | undefined;

  function db(): Pool {
    if (!pool) {
      pool = new pg.Pool({ connectionString: options.connectionString, max: poolSize });
      // An idle connection that breaks must not crash the process; the next query reconnects.
      pool.on("error", (error) => console.warn(`chat-gateway/storage/postgres: idle connection failed: ${error.message}`));
    }
    return pool;
  }

  async function ready(): Promise<Pool> {
    opened ??= (async () => {
      const client = await db().connect();
      try {
        await migrate(client, schema);
      } finally {
        client.release();
      }
    })();
    try {
      await opened;
    } catch (error) {
      opened = undefined;
      throw error;
    }
    return db();
  }

  async function rows<T>(text: string, values: unknown[]): Promise<T[]> {
    return (await (await ready()).query(text, values)).rows as T[];
  }

  async function transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await (await ready()).connect();
    try {
      await client.query("BEGIN");
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Applies one change inside the caller's transaction. */
  async function apply(client: PoolClient, owner: Owner, change: Change): Promise<CommitResult> {
    const channels = lastByKey(change.channels ?? [], (c) => c.chat_id).map((c) => [c.chat_id, JSON.stringify(c)] as const);
    const messages = lastByKey(change.messages ?? [], (m) => m.message_id).map(prepareMessage);
    const frames = (change.outbox ?? []).map((f) => [f.type, JSON.stringify(f.payload), outboxRedactionKey(f) ?? null] as const);
    const deleteMessages = change.deleteMessages ?? [];
    const deleteChannels = change.deleteChannels ?? [];
    if (!channels.length && !messages.length && !frames.length && !deleteMessages.length && !deleteChannels.length) {
      return { seqs: [], orphanedMedia: [] };
    }
    if (!(await messagesPresent(client, s, owner, change.requireMessages ?? []))) return { seqs: [], orphanedMedia: [], skipped: true };
    for (const [chatId, data] of channels) {
      await client.query(`INSERT INTO ${s}.channels (owner, chat_id, data) VALUES ($1, $2, $3) ON CONFLICT (owner, chat_id) DO UPDATE SET data = EXCLUDED.data`, [owner, chatId, data]);
    }
    await attachMedia(client, s, owner, change.messages ?? []);
    for (const values of messages) {
      await client.query(
        `INSERT INTO ${s}.messages (owner, message_id, chat_id, thread_key, role, status, ts, client_msg_id, text, words, data, lanes)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::tsvector, $11, $12::tsvector)
         ON CONFLICT (owner, message_id) DO UPDATE SET chat_id = EXCLUDED.chat_id, thread_key = EXCLUDED.thread_key, role = EXCLUDED.role,
           status = EXCLUDED.status, ts = EXCLUDED.ts, client_msg_id = EXCLUDED.client_msg_id, text = EXCLUDED.text, words = EXCLUDED.words, data = EXCLUDED.data,
           lanes = EXCLUDED.lanes`,
        [owner, ...values],
      );
    }
    const deleted: Array<{ data: string }> = [];
    if (deleteMessages.length) {
      deleted.push(...(await client.query<{ data: string }>(`DELETE FROM ${s}.messages WHERE owner = $1 AND message_id = ANY($2::text[]) RETURNING data`, [owner, deleteMessages])).rows);
    }
    if (deleteChannels.length) {
      await client.query(`DELETE FROM ${s}.channels WHERE owner = $1 AND chat_id = ANY($2::text[])`, [owner, deleteChannels]);
      deleted.push(
        ...(await client.query<{ data: string }>(`DELETE FROM ${s}.messages WHERE owner = $1 AND (chat_id = ANY($2::text[]) OR thread_key = ANY($2::text[])) RETURNING data`, [owner, deleteChannels]))
          .rows,
      );
    }
    const gone = deleted.map((row) => JSON.parse(row.data) as StoredMessage);
    const orphaned = await dropMediaOf(client, s, owner, gone);
    await redactOutbox(client, s, owner, gone, deleteChannels);
    const seqs: Seq[] = [];
    if (frames.length) {
      const { rows: counter } = await client.query<{ last_seq: string }>(
        `INSERT INTO ${s}.owners (owner, last_seq) VALUES ($1, $2) ON CONFLICT (owner) DO UPDATE SET last_seq = ${s}.owners.last_seq + $2 RETURNING last_seq`,
        [owner, frames.length],
      );
      const last = Number(counter[0].last_seq);
      const ts = now();
      for (let i = 0; i < frames.length; i++) seqs.push(last - frames.length + 1 + i);
      await client.query(
        `INSERT INTO ${s}.outbox (owner, seq, type, payload, ts, redact_key) SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[])`,
        [owner, seqs, frames.map((f) => f[0]), frames.map((f) => f[1]), frames.map(() => ts), frames.map((f) => f[2])],
      );
    }
    return { seqs, orphanedMedia: orphaned };
  }

  interface Queued {
    change: Change;
    resolve(result: CommitResult): void;
    reject(error: unknown): void;
  }
  /** Per owner: commits waiting for the owner's writer; present while the writer runs. */
  const queues = new Map<Owner, Queued[]>();
  /** The running writers, so close() can wait for them. */
  const writers = new Set<Promise<void>>();
  /** At most this many queued commits share one transaction. */
  const GROUP = 64;

  /**
   * One writer per owner and process applies the owner's commits in call order. Commits that queued
   * up while a transaction ran go into the next one together, each under a savepoint: one that fails
   * is rolled back alone and rejects, the others share a single COMMIT (one WAL flush).
   */
  async function write(owner: Owner, queue: Queued[]): Promise<void> {
    for (;;) {
      const group = queue.splice(0, GROUP);
      if (!group.length) break;
      const outcomes: Array<{ ok: true; result: CommitResult } | { ok: false; error: unknown }> = [];
      try {
        await transaction(async (client) => {
          for (const item of group) {
            if (group.length > 1) await client.query("SAVEPOINT one_change");
            try {
              outcomes.push({ ok: true, result: await apply(client, owner, item.change) });
              if (group.length > 1) await client.query("RELEASE SAVEPOINT one_change");
            } catch (error) {
              if (group.length === 1) throw error;
              await client.query("ROLLBACK TO SAVEPOINT one_change");
              outcomes.push({ ok: false, error });
            }
          }
        });
      } catch (error) {
        // The transaction itself failed (connection lost, COMMIT refused): nothing of it is durable.
        for (const item of group) item.reject(error);
        continue;
      }
      group.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome.ok) item.resolve(outcome.result);
        else item.reject(outcome.error);
      });
    }
    queues.delete(owner);
  }

  const search = postgresSearch(s, ready);

  return defineStorage({
    // The unique index messages_client_msg refuses a second (chat, client_msg_id) in any process.
    capabilities: { uniqueClientMsgId: true },
    async open() {
      await ready();
    },

    async close() {
      await Promise.allSettled([...writers]);
      const p = pool;
      opened = undefined;
      if (ownPool && p) {
        pool = undefined;
        await p.end();
      }
    },

    commit(owner, change) {
      return new Promise<CommitResult>((resolve, reject) => {
        const queued = queues.get(owner);
        if (queued) {
          queued.push({ change, resolve, reject });
          return;
        }
        const queue: Queued[] = [{ change, resolve, reject }];
        queues.set(owner, queue);
        const writer = write(owner, queue);
        writers.add(writer);
        void writer.finally(() => writers.delete(writer));
      });
    },

    async getChannel(owner, chatId) {
      const [row] = await rows<{ data: string }>(`SELECT data FROM ${s}.channels WHERE owner = $1 AND chat_id = $2`, [owner, chatId]);
      return row && (JSON.parse(row.data) as Channel);
    },

    async listChannels(owner) {
      return (await rows<{ data: string }>(`SELECT data FROM ${s}.channels WHERE owner = $1`, [owner])).map((r) => JSON.parse(r.data) as Channel);
    },

    async getMessage(owner, messageId) {
      const [row] = await rows<{ data: string }>(`SELECT data FROM ${s}.messages WHERE owner = $1 AND message_id = $2`, [owner, messageId]);
      return row && (JSON.parse(row.data) as StoredMessage);
    },

    async findByClientMsgId(owner, chatId, clientMsgId) {
      const [row] = await rows<{ data: string }>(
        `SELECT data FROM ${s}.messages WHERE owner = $1 AND client_msg_id = $3 AND (chat_id = $2 OR thread_key = $2) ORDER BY ts LIMIT 1`,
        [owner, chatId, clientMsgId],
      );
      return row && (JSON.parse(row.data) as StoredMessage);
    },

    async history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined> {
      const lane = [owner, query.chat_id, laneKey(query.thread_id ?? null)];
      let before = "";
      const values: unknown[] = [...lane];
      if (query.before !== undefined) {
        const [anchor] = await rows<{ ts: string }>(`SELECT ts FROM ${s}.messages WHERE owner = $1 AND chat_id = $2 AND thread_key = $3 AND message_id = $4`, [...lane, query.before]);
        if (!anchor) return undefined;
        before = " AND (ts, message_id) < ($4::bigint, $5::text)";
        values.push(anchor.ts, query.before);
      }
      const page = await rows<{ data: string }>(
        `SELECT data FROM ${s}.messages WHERE owner = $1 AND chat_id = $2 AND thread_key = $3${before} ORDER BY ts DESC, message_id DESC LIMIT ${Math.max(0, Math.floor(query.limit)) + 1}`,
        values,
      );
      const hasMore = page.length > query.limit;
      const messages = page.slice(0, query.limit).map((r) => JSON.parse(r.data) as StoredMessage);
      return { messages: messages.reverse(), has_more: hasMore };
    },

    async unfinishedMessages() {
      return (await rows<{ owner: string; data: string }>(`SELECT owner, data FROM ${s}.messages WHERE role = 'assistant' AND status = 'streaming'`, [])).map((r) => ({
        owner: r.owner,
        message: JSON.parse(r.data) as StoredMessage,
      }));
    },

    search(owner: Owner, q: SearchQuery): Promise<SearchHit[]> {
      return search(owner, q);
    },

    async readOutbox(owner, after, limit): Promise<OutboxEntry[]> {
      if (!(limit > 0)) return [];
      const cap = Number.isFinite(limit) ? ` LIMIT ${Math.floor(limit)}` : "";
      return (
        await rows<{ seq: string; type: string; payload: string; ts: string }>(`SELECT seq, type, payload, ts FROM ${s}.outbox WHERE owner = $1 AND seq > $2 AND type <> '' ORDER BY seq${cap}`, [owner, after])
      ).map((r) => ({ type: r.type, payload: JSON.parse(r.payload) as Record<string, unknown>, seq: Number(r.seq), ts: Number(r.ts) }));
    },

    async outboxBounds(owner): Promise<OutboxBounds> {
      const [row] = await rows<{ last: string | null; first: string | null }>(
        `SELECT (SELECT last_seq FROM ${s}.owners WHERE owner = $1) AS last, (SELECT min(seq) FROM ${s}.outbox WHERE owner = $1) AS first`,
        [owner],
      );
      const last = Number(row?.last ?? 0);
      return { first: row?.first != null ? Number(row.first) : last + 1, last };
    },

    async pruneOutbox(owner: Owner, policy: RetentionPolicy, at: number): Promise<void> {
      const clauses: string[] = [];
      const values: unknown[] = [owner];
      if (Number.isFinite(policy.maxFrames)) {
        values.push(Math.max(0, Math.floor(policy.maxFrames)));
        clauses.push(`seq <= (SELECT last_seq FROM ${s}.owners WHERE owner = $1) - $${values.length}`);
      }
      if (Number.isFinite(policy.maxAgeMs)) {
        values.push(Math.floor(at - policy.maxAgeMs));
        clauses.push(`ts < $${values.length}`);
      }
      if (!clauses.length) return;
      await rows(`DELETE FROM ${s}.outbox WHERE owner = $1 AND (${clauses.join(" OR ")})`, values);
    },

    async getDevice(owner, deviceId) {
      const [row] = await rows<{ data: string }>(`SELECT data FROM ${s}.devices WHERE owner = $1 AND device_id = $2`, [owner, deviceId]);
      return row && (JSON.parse(row.data) as Device);
    },

    async listDevices(owner) {
      return (await rows<{ data: string }>(`SELECT data FROM ${s}.devices WHERE owner = $1`, [owner])).map((r) => JSON.parse(r.data) as Device);
    },

    async putDevice(owner, device) {
      await rows(`INSERT INTO ${s}.devices (owner, device_id, data) VALUES ($1, $2, $3) ON CONFLICT (owner, device_id) DO UPDATE SET data = EXCLUDED.data`, [
        owner,
        device.device_id,
        JSON.stringify(device),
      ]);
    },

    async getMedia(owner, mediaId) {
      const [row] = await rows<{ data: string }>(`SELECT data FROM ${s}.media WHERE owner = $1 AND media_id = $2`, [owner, mediaId]);
      return row && (JSON.parse(row.data) as MediaRecord);
    },

    async putMedia(owner, media) {
      await rows(`INSERT INTO ${s}.media (owner, media_id, data) VALUES ($1, $2, $3) ON CONFLICT (owner, media_id) DO UPDATE SET data = EXCLUDED.data`, [
        owner,
        media.media_id,
        JSON.stringify(media),
      ]);
    },

    async deleteMedia(owner, mediaIds) {
      if (!mediaIds.length) return;
      await rows(`DELETE FROM ${s}.media WHERE owner = $1 AND media_id = ANY($2::text[])`, [owner, mediaIds]);
    },
  });
}
