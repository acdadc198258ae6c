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

/**
 * Runs `work` on a client taken from the pool. A client out of the pool has no listener for its
 * connection's errors (the pool listens only while it is idle), so a connection that breaks
 * meanwhile (the database restarting, a network cut) would throw an unhandled `error` and end the
 * process: here the error is kept, and the client goes back with it, so the pool closes it instead
 * of handing a dead connection to the next caller. `spoil` marks the client broken likewise.
 */
async function checkout<T>(
  pool: Pool,
  work: (client: PoolClient, spoil: (error: unknown) => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const spoil = (error: unknown) => {
    broken ??= error instanceof Error ? error : new Error(String(error));
  };
  client.on("error", spoil);
  try {
    return await work(client, spoil);
  } finally {
    client.off("error", spoil);
    client.release(broken);
  }
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
    opened ??= checkout(db(), (client) => migrate(client, options.schema));
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
      return checkout(await ready(), async (client, spoil) => {
        await client.query("BEGIN");
        try {
          const result = await work(client);
          await client.query("COMMIT");
          return result;
        } catch (error) {
          // A connection that cannot even roll back is not handed to anyone again.
          await client.query("ROLLBACK").catch(spoil);
          throw error;
        }
      });
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
