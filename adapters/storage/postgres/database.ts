/**
 * The PostgreSQL connection of one storage: its pool, opened and migrated once, plain queries and
 * transactions.
 * @module
 */
import pg from "pg";
import type { Pool, PoolClient } from "pg";
import { migrate } from "./schema.js";

/** A storage's way to the database; `s` is its schema, quoted for SQL. */
export interface Database {
  readonly s: string;
  /** The pool once the schema is migrated (migrating on first use, again after a failure). */
  ready(): Promise<Pool>;
  rows<T>(text: string, values: unknown[]): Promise<T[]>;
  transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T>;
  /** Ends the pool when the storage made it; the next query opens it again. */
  close(): Promise<void>;
}

/** What {@link database} connects with. */
export interface DatabaseOptions {
  pool: Pool | undefined;
  connectionString: string | undefined;
  poolSize: number;
  schema: string;
}

/** Opens the pool lazily: nothing connects before the first query or `open()`. */
export function database(options: DatabaseOptions): Database {
  const ownPool = !options.pool;
  let pool: Pool | undefined = options.pool;
  let opened: Promise<void> | undefined;

  function db(): Pool {
    if (!pool) {
      pool = new pg.Pool({ connectionString: options.connectionString, max: options.poolSize });
      // An idle connection that breaks must not crash the process; the next query reconnects.
      pool.on("error", (error) =>
        console.warn(`chat-gateway/storage/postgres: idle connection failed: ${error.message}`),
      );
    }
    return pool;
  }

  async function ready(): Promise<Pool> {
    opened ??= (async () => {
      const client = await db().connect();
      try {
        await migrate(client, options.schema);
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

  return {
    s: `"${options.schema}"`,
    ready,
    async rows<T>(text: string, values: unknown[]): Promise<T[]> {
      return (await (await ready()).query(text, values)).rows as T[];
    },
    async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
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
    },
    async close() {
      const p = pool;
      opened = undefined;
      if (ownPool && p) {
        pool = undefined;
        await p.end();
      }
    },
  };
}
