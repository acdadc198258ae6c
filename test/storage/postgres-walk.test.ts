import pg from "pg";
import { afterAll, describe, expect, test } from "vitest";
import type { SearchQuery, Storage, StoredMessage } from "chat-gateway";
import { foldText } from "chat-gateway/storage";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { memoryStorage } from "chat-gateway/storage/memory";
import { FOLLOW_UPS, MIGRATIONS } from "../../adapters/storage/postgres/schema.js";
import {
  candidatesQuery,
  estimatesQuery,
  laneToken,
  plannedRows,
  totalQuery,
  tsvectorText,
  walkQuery,
} from "../../adapters/storage/postgres/search.js";
import { rankQuery } from "../../adapters/storage/postgres/search-rank.js";
import { CANDIDATES, FEW, WALK_FROM, WALK_WINDOW, walksAllChats } from "../../adapters/storage/postgres/search-plan.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("storage: postgres search walk");

const msg = (message_id: string, extra: Partial<StoredMessage> = {}): StoredMessage => ({
  message_id,
  role: "user",
  text: `text ${message_id}`,
  reasoning: "",
  ts: 1,
  media: [],
  chat_id: "c1",
  thread_id: null,
  ...extra,
});

/**
 * Texts where ranking depends on occurrences, prefixes and folding, ASCII and not; the filler
 * words give PostgreSQL the hundred common lexemes it needs to estimate a prefix from statistics.
 */
const WORDS = [
  "alpha",
  "Alphabet",
  "ALPHA",
  "beta",
  "café",
  "Cafe\u0301",
  "naïve",
  "naive",
  "İstanbul",
  "e\u0301x",
  "alpha.beta",
  "2024",
  "v2",
];
const history = (): StoredMessage[] =>
  Array.from({ length: 900 }, (_, i) => {
    const text = `${Array.from({ length: 2 + (i % 6) }, (_, k) => WORDS[(i * 5 + k * 3) % WORDS.length]).join(i % 4 ? " " : " \n ")} w${i % 150} w${(i * 7) % 150}`;
    return msg(`m${String(i).padStart(3, "0")}`, {
      text,
      ts: 100 + (i % 40),
      chat_id: `c${i % 3}`,
      thread_id: i % 7 === 0 ? "t1" : null,
    });
  });

const QUERIES: SearchQuery[] = [
  "alpha",
  "al",
  "alpha beta",
  "cafe",
  "naive istanbul",
  "ex",
  "v2 2024",
  "zzz beta",
  "zeppelin",
  "zeppelin alpha",
].flatMap((query) => [
  { query, scope: "all" as const, limit: 50 },
  { query, scope: "all" as const, limit: 3 },
  { query, scope: "chat" as const, chat_id: "c1", limit: 50 },
  { query, scope: "chat" as const, chat_id: "c0", thread_id: "t1", limit: 50 },
]);

describe.skipIf(!available)(
  "postgres storage - chat and thread search walks the newest messages; the search table",
  () => {
    const schemas: string[] = [];
    const made: Storage[] = [];
    const open = async (schema: string) => {
      const s = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2 });
      made.push(s);
      await s.open?.();
      return s;
    };
    afterAll(async () => {
      for (const s of made) await s.close?.();
      for (const schema of schemas) await dropSchema(schema);
    });

    test("postgres - a word in most of a chat or thread, or in its older part only, finds what the memory storage finds, the walk through messages_chat_recent", async () => {
      const schema = `t_${runId()}`;
      schemas.push(schema);
      const pgStore = await open(schema);
      const mem = memoryStorage();
      // "dense": every message has the word (half of them in thread td), more than one step's candidates.
      // "sparse": longer than the walk's window, with too few matches in it (174 of 2,387), so GIN must
      // answer; its best matches for "comm filler1" are older than the window. (The memory storage ranks
      // every match, not the newest 1,000: the best ones are kept among the newest 1,000 so both agree.)
      const dense = Array.from({ length: WALK_WINDOW + 500 }, (_, i) =>
        msg(`d${String(i).padStart(5, "0")}`, {
          text: `common ${i % 7 ? "" : "common common"} filler${i % 300} tail`,
          ts: 10 * i,
          chat_id: "dense",
          thread_id: i % 2 ? "td" : null,
        }),
      );
      const sparse = Array.from({ length: WALK_WINDOW + 2500 }, (_, i) => {
        const text =
          i < WALK_FROM + 200
            ? `common ${i % 23 === 0 && i >= 1400 ? "common" : ""} filler${i % 300}`
            : `other ${i % 23 ? "" : "common"} filler${i % 300}`;
        return msg(`s${String(i).padStart(5, "0")}`, { text, ts: 10 * i + 3, chat_id: "sparse" });
      });
      for (const messages of [dense, sparse]) {
        await pgStore.commit("deep", { messages });
        await mem.commit("deep", { messages });
      }
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        await client.query(`ANALYZE "${schema}".messages`);
        // The planner expects more than WALK_FROM matches in every scope below, so each search walks first.
        for (const scope of [{ chat_id: "dense" }, { chat_id: "dense", thread_id: "td" }, { chat_id: "sparse" }]) {
          const estimate = plannedRows(
            (
              await client.query(
                estimatesQuery(`"${schema}"`, { query: "common", scope: "chat", limit: 20, ...scope }, ["common"]),
              )
            ).rows[0],
          );
          expect(estimate, JSON.stringify(scope)).toBeGreaterThan(WALK_FROM);
        }
        const statement = walkQuery(
          `"${schema}"`,
          "deep",
          { query: "common", scope: "chat", chat_id: "dense", limit: 20 },
          ["common"],
          "all",
          CANDIDATES,
          WALK_WINDOW,
        );
        // On a table this small a scan and sort is as good; past one the index gives the order without sorting.
        await client.query("SET enable_seqscan = off");
        const plan = (await client.query(`EXPLAIN ${statement.text}`, statement.values)).rows
          .map((r) => Object.values(r)[0])
          .join("\n");
        expect(plan).toContain("Index Scan Backward using messages_chat_recent");
        expect(plan).not.toContain("Sort");
      } finally {
        await client.end();
      }
      for (const query of ["common", "comm filler1", "common zzz"]) {
        for (const scope of [{ chat_id: "dense" }, { chat_id: "dense", thread_id: "td" }, { chat_id: "sparse" }]) {
          for (const limit of [3, 40]) {
            const q: SearchQuery = { query, limit, scope: "chat", ...scope };
            const found = await pgStore.search("deep", q);
            expect(found.length, JSON.stringify(q)).toBeGreaterThan(0);
            expect(found, JSON.stringify(q)).toEqual(await mem.search("deep", q));
          }
        }
      }
    });

    test("postgres - a word common across all chats is walked newest first through messages_recent and finds what GIN and the memory storage find", async () => {
      const schema = `t_${runId()}`;
      schemas.push(schema);
      const pgStore = await open(schema);
      const mem = memoryStorage();
      // "alpha" in every other message (1,500, more than one step's candidates), twice in some of the
      // newest, so that the best are among the newest 1,000 matches (the memory storage ranks them all);
      // "beta" in one in three. Another owner's newer messages all have "alpha": they must never show.
      const wide = Array.from({ length: 3000 }, (_, i) =>
        msg(`w${String(i).padStart(4, "0")}`, {
          text: `${i % 2 ? "other" : "alpha"} ${i % 50 === 0 && i > 2500 ? "alpha" : ""} ${i % 3 ? "" : "beta"} filler${i % 200}`,
          ts: i,
          chat_id: `c${i % 4}`,
        }),
      );
      await pgStore.commit("wide", { messages: wide });
      await mem.commit("wide", { messages: wide });
      await pgStore.commit("else", {
        messages: Array.from({ length: 1000 }, (_, i) =>
          msg(`e${i}`, { text: `alpha beta filler${i % 200}`, ts: 10_000 + i }),
        ),
      });
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
        const s = `"${schema}"`;
        const q: SearchQuery = { query: "alpha", scope: "all", limit: 20 };
        const total = plannedRows((await client.query(totalQuery(s))).rows[0]);
        const alpha = plannedRows((await client.query(estimatesQuery(s, q, ["alpha"]))).rows[0]);
        expect(walksAllChats(alpha, total)).toBe(true);
        const walk = candidatesQuery(s, "wide", q, ["alpha"], "all", CANDIDATES, { newest: true });
        const plan = (await client.query(`EXPLAIN ${walk.text}`, walk.values)).rows
          .map((r) => Object.values(r)[0])
          .join("\n");
        expect(plan).toContain("Index Scan Backward using messages_recent");
        expect(plan).not.toContain("messages_words");
        // The walk and GIN rank the same newest 1,000 matches alike, for one word and for any of two.
        for (const [terms, mode] of [
          [["alpha"], "all"],
          [["alpha", "beta"], "any"],
        ] as const) {
          const ranked = async (newest: boolean) => {
            const statement = rankQuery(
              s,
              candidatesQuery(s, "wide", q, [...terms], mode, CANDIDATES, { newest }),
              [...terms],
              CANDIDATES,
            );
            return (await client.query(statement.text, statement.values)).rows.map((r) => r.message_id);
          };
          const walked = await ranked(true);
          expect(walked.length).toBe(CANDIDATES);
          expect(walked).toEqual(await ranked(false));
        }
      } finally {
        await client.end();
      }
      for (const query of ["alpha", "alpha zzz", "alph beta", "alpha other"]) {
        for (const limit of [3, 40]) {
          const q: SearchQuery = { query, limit, scope: "all" };
          const found = await pgStore.search("wide", q);
          expect(found.length, JSON.stringify(q)).toBe(limit);
          expect(found, JSON.stringify(q)).toEqual(await mem.search("wide", q));
        }
      }
    });

    test("postgres - a version 3 schema is migrated to version 4: chat and thread search keep their messages and get the newest-first indexes", async () => {
      const old = `t_${runId()}`;
      schemas.push(old);
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        await client.query(
          `CREATE SCHEMA "${old}"; CREATE TABLE "${old}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
        );
        for (let v = 1; v <= 3; v++) {
          await client.query(MIGRATIONS[v - 1](`"${old}"`));
          await client.query(`INSERT INTO "${old}".schema_version (version) VALUES ($1)`, [v]);
        }
        for (const m of [
          msg("flat", { text: "Written before the upgrade", ts: 5 }),
          msg("threaded", { text: "Thread reply before the upgrade", ts: 4, thread_id: "t1" }),
        ]) {
          const v = tsvectorText(m.text, m.chat_id, m.thread_id);
          await client.query(
            `INSERT INTO "${old}".messages (owner, message_id, chat_id, thread_key, role, ts, text, words, lanes, data) VALUES ('o', $1, $2, $3, 'user', $4, $5, $6::tsvector, $7::tsvector, $8)`,
            [m.message_id, m.chat_id, m.thread_id ?? "", m.ts, m.text, v.words, v.lanes, JSON.stringify(m)],
          );
        }
        const s = await open(old);
        await s.commit("o", {
          messages: [msg("after", { text: "written after the upgrade", ts: 6, thread_id: "t1" })],
        });
        expect(
          (await s.search("o", { query: "upgr", scope: "chat", chat_id: "c1", limit: 5 })).map((h) => h.message_id),
        ).toEqual(["after", "flat", "threaded"]);
        expect(
          (await s.search("o", { query: "upgr", scope: "chat", chat_id: "c1", thread_id: "t1", limit: 5 })).map(
            (h) => h.message_id,
          ),
        ).toEqual(["after", "threaded"]);
        expect((await client.query(`SELECT max(version) AS v FROM "${old}".schema_version`)).rows[0].v).toBe(
          MIGRATIONS.length,
        );
        const indexes = (await client.query(`SELECT indexname FROM pg_indexes WHERE schemaname = $1`, [old])).rows.map(
          (r) => r.indexname,
        );
        expect(indexes).toEqual(expect.arrayContaining(["messages_chat_recent", "messages_thread_recent"]));
        expect(indexes).not.toContain("messages_thread");
        // The thread walk uses the partial index: the statement implies its predicate.
        const statement = walkQuery(
          `"${old}"`,
          "o",
          { query: "upgr", scope: "chat", chat_id: "c1", thread_id: "t1", limit: 5 },
          ["upgr"],
          "all",
          CANDIDATES,
          WALK_WINDOW,
        );
        await client.query("SET enable_seqscan = off");
        const plan = (await client.query(`EXPLAIN ${statement.text}`, statement.values)).rows
          .map((r) => Object.values(r)[0])
          .join("\n");
        expect(plan).toContain("messages_thread_recent");
      } finally {
        await client.end();
      }
    });

    /** A schema at version `version`, holding `messages` as that version's code wrote them. */
    async function oldSchema(client: pg.Client, version: number, messages: StoredMessage[]): Promise<string> {
      const schema = `t_${runId()}`;
      schemas.push(schema);
      await client.query(
        `CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (let v = 1; v <= version; v++) {
        await client.query(MIGRATIONS[v - 1](`"${schema}"`));
        await client.query(`INSERT INTO "${schema}".schema_version (version) VALUES ($1)`, [v]);
      }
      for (const m of messages) {
        const v = tsvectorText(m.text, m.chat_id, m.thread_id);
        await client.query(
          `INSERT INTO "${schema}".messages (owner, message_id, chat_id, thread_key, role, ts, text, words, lanes, data) VALUES ('o', $1, $2, $3, 'user', $4, $5, $6::tsvector, $7::tsvector, $8)`,
          [m.message_id, m.chat_id, m.thread_id ?? "", m.ts, m.text, v.words, v.lanes, JSON.stringify(m)],
        );
      }
      return schema;
    }

    const searchRows = async (client: pg.Client, schema: string) =>
      (
        await client.query(`SELECT owner, message_id, ts FROM "${schema}".message_search ORDER BY owner, message_id`)
      ).rows.map((r) => `${r.owner}/${r.message_id}/${r.ts}`);
    const messageRows = async (client: pg.Client, schema: string) =>
      (
        await client.query(`SELECT owner, message_id, ts FROM "${schema}".messages ORDER BY owner, message_id`)
      ).rows.map((r) => `${r.owner}/${r.message_id}/${r.ts}`);

    for (const from of [3, 4]) {
      test(`postgres - a version ${from} schema is migrated: every message is searchable and ranks as in the memory storage, and edits, deletes and adoption keep the search table in step`, async () => {
        const client = new pg.Client({ connectionString: DATABASE_URL });
        await client.connect();
        try {
          const messages = history();
          const schema = await oldSchema(client, from, messages);
          const s = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2 });
          made.push(s);
          const mem = memoryStorage();
          await mem.commit("o", { messages });
          await s.open?.();
          // With statistics, a common word is ranked by the ranking statement, a rare one in JS (FEW): both checked.
          await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
          for (const scope of [{ scope: "all" as const }, { scope: "chat" as const, chat_id: "c1" }]) {
            const estimate = plannedRows(
              (await client.query(estimatesQuery(`"${schema}"`, { query: "alpha", limit: 5, ...scope }, ["alpha"])))
                .rows[0],
            );
            expect(estimate, JSON.stringify(scope)).toBeGreaterThan(FEW);
          }
          for (const q of QUERIES) expect(await s.search("o", q), JSON.stringify(q)).toEqual(await mem.search("o", q));
          expect((await client.query(`SELECT max(version) AS v FROM "${schema}".schema_version`)).rows[0].v).toBe(
            MIGRATIONS.length,
          );
          expect(
            (
              await client.query(
                `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'messages' AND column_name = 'words'`,
                [schema],
              )
            ).rows[0].n,
          ).toBe(0);
          expect(await searchRows(client, schema)).toEqual(await messageRows(client, schema));

          // An edit replaces the words and the time; a delete, of a message or a channel, takes the search row along.
          const edited = { ...messages[4], text: "zeppelin replaces the old words", ts: 999 };
          for (const store of [s, mem]) {
            await store.commit("o", { messages: [edited] });
            await store.commit("o", { deleteMessages: [messages[6].message_id] });
            await store.commit("o", { deleteChannels: ["c2"] });
          }
          expect(
            (await s.search("o", { query: "zeppelin", scope: "all", limit: 5 })).map((h) => [h.message_id, h.ts]),
          ).toEqual([[edited.message_id, 999]]);
          expect(
            (await s.search("o", { query: messages[4].text, scope: "all", limit: 200 })).map((h) => h.message_id),
          ).not.toContain(edited.message_id);
          for (const q of QUERIES) expect(await s.search("o", q), JSON.stringify(q)).toEqual(await mem.search("o", q));
          expect(await searchRows(client, schema)).toEqual(await messageRows(client, schema));
          expect((await searchRows(client, schema)).some((r) => r.startsWith(`o/${messages[6].message_id}/`))).toBe(
            false,
          );

          // Adoption moves the search rows with the messages, in the same transaction.
          await s.adoptOwner("o", "p");
          expect(await s.search("o", { query: "alpha", scope: "all", limit: 5 })).toEqual([]);
          expect((await s.search("p", { query: "zeppelin", scope: "all", limit: 5 })).map((h) => h.message_id)).toEqual(
            [edited.message_id],
          );
          expect((await searchRows(client, schema)).every((r) => r.startsWith("p/"))).toBe(true);
          expect(await searchRows(client, schema)).toEqual(await messageRows(client, schema));
        } finally {
          await client.end();
        }
      });
    }

    /** A message's search columns as version 5 wrote them: a combining mark split a word. */
    function version5Columns(m: StoredMessage): { words: string; folded: string; lanes: string } {
      const OLD_WORD = /[\p{L}\p{N}]+/gu;
      const words = [...new Set(foldText(m.text).match(OLD_WORD) ?? [])];
      const lanes = [laneToken("c", m.chat_id), ...(m.thread_id === null ? [] : [laneToken("t", m.thread_id)])];
      return {
        words: words.map((w) => `'${w}'`).join(" "),
        folded: Array.from(m.text.matchAll(OLD_WORD), ([w]) => ` ${foldText(w)}`).join(""),
        lanes: words.flatMap((w) => lanes.map((lane) => `'${lane}${w}'`)).join(" "),
      };
    }

    test("postgres - a version 5 schema is migrated: words a combining mark split are cut anew, and search finds what the memory storage finds", async () => {
      const schema = `t_${runId()}`;
      schemas.push(schema);
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        // Common enough (150 each) that the planner expects more than FEW matches: SQL ranks them on `folded`.
        const texts = ["नमस्ते दुनिया", "שָׁלוֹם חברים", "Zu\u0308rich und Zürich", "Xin chào Việt Nam"];
        const marked = Array.from({ length: 600 }, (_, i) =>
          msg(`x${i}`, { text: texts[i % 4], ts: 200 + i, chat_id: `c${i % 3}` }),
        );
        const messages = [...history(), ...marked];
        await client.query(
          `BEGIN; CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
        );
        for (let v = 1; v <= 5; v++) {
          await client.query(MIGRATIONS[v - 1](`"${schema}"`));
          await FOLLOW_UPS[v]?.(client as unknown as pg.PoolClient, `"${schema}"`);
          await client.query(`INSERT INTO "${schema}".schema_version (version) VALUES ($1)`, [v]);
        }
        await client.query("COMMIT");
        for (const m of messages) {
          const old = version5Columns(m);
          await client.query(
            `WITH w AS (INSERT INTO "${schema}".messages (owner, message_id, chat_id, thread_key, role, ts, text, lanes, data) VALUES ('o', $1, $2, $3, 'user', $4, $5, $6::tsvector, $7))
           INSERT INTO "${schema}".message_search (owner, message_id, ts, words, folded) VALUES ('o', $1, $4, $8::tsvector, $9)`,
            [
              m.message_id,
              m.chat_id,
              m.thread_id ?? "",
              m.ts,
              m.text,
              old.lanes,
              JSON.stringify(m),
              old.words,
              old.folded,
            ],
          );
        }
        const s = await open(schema);
        const mem = memoryStorage();
        await mem.commit("o", { messages });
        expect((await client.query(`SELECT max(version) AS v FROM "${schema}".schema_version`)).rows[0].v).toBe(
          MIGRATIONS.length,
        );
        await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
        expect(
          plannedRows(
            (await client.query(estimatesQuery(`"${schema}"`, { query: "x", scope: "all", limit: 5 }, ["नमसत"])))
              .rows[0],
          ),
        ).toBeGreaterThan(FEW);
        const queries = [
          ...QUERIES,
          ...["नमस्ते", "दुनिया", "שָׁלוֹם", "zürich", "Việt", "i̇stanbul"].flatMap((query) => [
            { query, scope: "all" as const, limit: 50 },
            { query, scope: "chat" as const, chat_id: "c1", limit: 50 },
          ]),
        ];
        for (const q of queries) expect(await s.search("o", q), JSON.stringify(q)).toEqual(await mem.search("o", q));
        expect((await s.search("o", { query: "नमस्ते", scope: "all", limit: 200 })).length).toBe(150);
        expect((await s.search("o", { query: "zürich", scope: "chat", chat_id: "c1", limit: 200 })).length).toBe(50);
        // Rows written by this version hold what the migration computed for the old ones.
        const stored = async (id: string) =>
          (
            await client.query(
              `SELECT x.words::text, x.folded, m.lanes::text FROM "${schema}".message_search x JOIN "${schema}".messages m USING (owner, message_id) WHERE x.message_id = $1`,
              [id],
            )
          ).rows[0];
        const before = await stored("x0");
        await s.commit("o", { messages: [marked[0]] });
        expect(await stored("x0")).toEqual(before);
      } finally {
        await client.end();
      }
    });
  },
);
