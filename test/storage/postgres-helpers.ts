// PostgreSQL storages on throwaway schemas, for the tests that look past the conformance suite:
// messages to store, schemas as an older version left them, and the planner's plans.
import pg from "pg";
import { afterAll } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { SearchQuery, Storage } from "chat-gateway/storage";
import { postgresStorage, type PostgresStorageOptions } from "chat-gateway/storage/postgres";
import { FOLLOW_UPS, MIGRATIONS } from "../../adapters/storage/postgres/schema.js";
import { DATABASE_URL, dropSchema, runId } from "../fixtures/services.js";

export const msg = (message_id: string, extra: Partial<StoredMessage> = {}): StoredMessage => ({
  message_id,
  role: "user",
  text: `text ${message_id}`,
  reasoning: "",
  ts: Date.now(),
  media: [],
  chat_id: "c1",
  thread_id: null,
  ...extra,
});

/** Schemas and storages of one describe block. */
export interface PostgresSchemas {
  /** A new schema name, dropped after the block. */
  fresh(): string;
  /** An opened storage on `schema` (a pool of two unless `extra` says otherwise), closed after the block. */
  open(schema: string, extra?: Partial<PostgresStorageOptions>): Promise<Storage>;
}

/** For a describe block whose tests open storages on schemas of their own: all closed and dropped after it. */
export function postgresSchemas(): PostgresSchemas {
  const schemas: string[] = [];
  const made: Storage[] = [];
  afterAll(async () => {
    for (const storage of made) await storage.close?.();
    for (const schema of schemas) await dropSchema(schema);
  });
  return {
    fresh() {
      const schema = `t_${runId()}`;
      schemas.push(schema);
      return schema;
    },
    async open(schema, extra = {}) {
      const storage = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2, ...extra });
      made.push(storage);
      await storage.open?.();
      return storage;
    },
  };
}

/** One fresh schema for a describe block, and storages on it as separate processes would open them. */
export function sharedSchema(extra: Partial<PostgresStorageOptions> = {}): {
  schema: string;
  open(): Promise<Storage>;
} {
  const schemas = postgresSchemas();
  const schema = schemas.fresh();
  return { schema, open: () => schemas.open(schema, extra) };
}

/** Creates `schema` as the code of `version` left it: that version's migrations and follow-ups, in one transaction. */
export async function schemaAtVersion(client: pg.Client, schema: string, version: number): Promise<void> {
  await client.query(
    `BEGIN; CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (let v = 1; v <= version; v++) {
    await client.query(MIGRATIONS[v - 1](`"${schema}"`));
    await FOLLOW_UPS[v]?.(client as unknown as pg.PoolClient, `"${schema}"`);
    await client.query(`INSERT INTO "${schema}".schema_version (version) VALUES ($1)`, [v]);
  }
  await client.query("COMMIT");
}

/** The planner's plan for a statement, as EXPLAIN prints it. */
export async function planOf(client: pg.Client, statement: { text: string; values?: unknown[] }): Promise<string> {
  return (await client.query(`EXPLAIN ${statement.text}`, statement.values)).rows
    .map((row) => Object.values(row)[0])
    .join("\n");
}

/** Runs `use` with a client of its own on the test database, ended after. */
export async function withClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** The ids of what a search finds, best first. */
export async function foundIds(storage: Storage, owner: string, query: SearchQuery): Promise<string[]> {
  return (await storage.search(owner, query)).map((hit) => hit.message_id);
}
