import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { SearchQuery, Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { postgresStorage, type PostgresStorageOptions } from "chat-gateway/storage/postgres";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("postgres prepared search statements");

/**
 * Search statements as named prepared statements. Each storage here runs on a pool of one
 * connection, so `pg_prepared_statements` (a per-connection view) shows what its searches prepared.
 */
describe.skipIf(!available)("postgres storage - prepared search statements", () => {
  const schema = `t_${runId()}`;
  const memory = memoryStorage();
  // "common" in every message, "rare" in one in ten, three chats: the common word across all
  // chats is walked newest first, the rare one read through GIN.
  const messages: StoredMessage[] = Array.from({ length: 3000 }, (_, i) => ({
    message_id: `p${String(i).padStart(4, "0")}`,
    role: "user",
    text: `common ${["red", "green", "blue"][i % 3]}${i % 40} note ${i}${i % 10 === 3 ? " rare" : ""}${i % 7 === 0 ? " common" : ""}`,
    reasoning: "",
    ts: 1_000 + i,
    media: [],
    chat_id: `c${i % 3}`,
    thread_id: null,
  }));
  const OWNER = "prepared";

  /** A storage on a pool of one connection, and what that connection has prepared. */
  async function onOneConnection(
    extra: Partial<PostgresStorageOptions>,
    work: (
      s: Storage,
      statements: () => Promise<Array<{ statement: string; generic: number; custom: number }>>,
    ) => Promise<void>,
  ) {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    const storage = postgresStorage({ pool, schema, ...extra });
    try {
      await work(
        storage,
        async () =>
          (
            await pool.query(
              `SELECT statement, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name LIKE 'cg\\_%'`,
            )
          ).rows,
      );
    } finally {
      await storage.close?.();
      await pool.end();
    }
  }

  const ids = async (s: Storage, q: SearchQuery) => (await s.search(OWNER, q)).map((h) => [h.message_id, h.snippet]);

  beforeAll(async () => {
    const s = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2 });
    await s.commit(OWNER, { messages });
    await s.close?.();
    await memory.commit(OWNER, { messages });
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
    await client.end();
  });
  afterAll(() => dropSchema(schema));

  const QUERIES: SearchQuery[] = [
    { query: "common", scope: "all", limit: 20 },
    { query: "common rare", scope: "all", limit: 20 },
    { query: "rare", scope: "all", limit: 5 },
    { query: "rare blue", scope: "chat", chat_id: "c2", limit: 10 },
  ];

  test("postgres - repeated searches run on a plan each connection keeps, and find what the memory storage finds", async () => {
    await onOneConnection({}, async (s, statements) => {
      for (let run = 0; run < 8; run++) {
        for (const q of QUERIES) expect(await ids(s, q)).toEqual(await ids(memory, q));
      }
      const prepared = await statements();
      expect(prepared.length).toBeGreaterThanOrEqual(QUERIES.length);
      // Every search ran prepared statements, none of them more than once per search.
      for (const p of prepared) expect(p.generic + p.custom).toBe(8);
      // The newest-first walks (the common word, and the two words' "any" step) settle on a generic
      // plan after PostgreSQL's five custom ones: no more planning per search.
      const walks = prepared.filter((p) => p.statement.includes("message_id DESC OFFSET 0) w WHERE"));
      expect(walks.length).toBe(2);
      for (const w of walks) expect(w.generic).toBeGreaterThanOrEqual(3);
    });
  });

  test("postgres - with preparedStatements off, search prepares nothing and finds the same", async () => {
    await onOneConnection({ preparedStatements: false }, async (s, statements) => {
      for (const q of QUERIES) expect(await ids(s, q)).toEqual(await ids(memory, q));
      expect(await statements()).toEqual([]);
    });
  });

  test("postgres - a process prepares at most 64 KiB of search statement text; the rest run unnamed and find the same", async () => {
    await onOneConnection({}, async (s, statements) => {
      // Each limit is a statement text of its own, and so is each number of words.
      for (let limit = 1; limit <= 40; limit++) {
        for (const query of ["rare", "common rare blue note red1 green2"]) {
          const q: SearchQuery = { query, scope: "all", limit };
          expect(await ids(s, q)).toEqual(await ids(memory, q));
        }
      }
      const prepared = await statements();
      expect(prepared.length).toBeGreaterThan(10);
      expect(prepared.length).toBeLessThan(80);
      expect(prepared.reduce((bytes, p) => bytes + p.statement.length, 0)).toBeLessThanOrEqual(64 * 1024);
      // Past the budget a new text runs unnamed: nothing more is prepared.
      const q: SearchQuery = { query: "common", scope: "chat", chat_id: "c1", limit: 7 };
      expect(await ids(s, q)).toEqual(await ids(memory, q));
      expect((await statements()).length).toBe(prepared.length);
    });
  });
});
