// Older PostgreSQL schemas migrated to the search table: every message stays searchable and ranks
// as in the memory storage, and edits, deletes and adoption keep the table in step.
import type pg from "pg";
import { describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { SearchQuery } from "chat-gateway/storage";
import { foldText } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { MIGRATIONS } from "../../adapters/storage/postgres/schema.js";
import {
  estimatesQuery,
  laneToken,
  plannedRows,
  tsvectorText,
  walkQuery,
} from "../../adapters/storage/postgres/search.js";
import { CANDIDATES, FEW, WALK_WINDOW } from "../../adapters/storage/postgres/search-plan.js";
import { postgresAvailable } from "../fixtures/services.js";
import { foundIds, msg, planOf, postgresSchemas, schemaAtVersion, withClient } from "./postgres-helpers.js";

const available = await postgresAvailable("storage: postgres search migrations");

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
    const schemas = postgresSchemas();

    /** A schema at version `version`, holding `messages` as that version's code wrote them. */
    async function oldSchema(client: pg.Client, version: number, messages: StoredMessage[]): Promise<string> {
      const schema = schemas.fresh();
      await schemaAtVersion(client, schema, version);
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

    test("postgres - a version 3 schema is migrated to version 4: chat and thread search keep their messages and get the newest-first indexes", async () => {
      await withClient(async (client) => {
        const old = await oldSchema(client, 3, [
          msg("flat", { text: "Written before the upgrade", ts: 5 }),
          msg("threaded", { text: "Thread reply before the upgrade", ts: 4, thread_id: "t1" }),
        ]);
        const s = await schemas.open(old);
        await s.commit("o", {
          messages: [msg("after", { text: "written after the upgrade", ts: 6, thread_id: "t1" })],
        });
        expect(await foundIds(s, "o", { query: "upgr", scope: "chat", chat_id: "c1", limit: 5 })).toEqual([
          "after",
          "flat",
          "threaded",
        ]);
        expect(
          await foundIds(s, "o", { query: "upgr", scope: "chat", chat_id: "c1", thread_id: "t1", limit: 5 }),
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
        const plan = await planOf(client, statement);
        expect(plan).toContain("messages_thread_recent");
      });
    });

    for (const from of [3, 4]) {
      test(`postgres - a version ${from} schema is migrated: every message is searchable and ranks as in the memory storage, and edits, deletes and adoption keep the search table in step`, async () => {
        await withClient(async (client) => {
          const messages = history();
          const schema = await oldSchema(client, from, messages);
          const s = await schemas.open(schema);
          const mem = memoryStorage();
          await mem.commit("o", { messages });
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
          expect(await foundIds(s, "o", { query: messages[4].text, scope: "all", limit: 200 })).not.toContain(
            edited.message_id,
          );
          for (const q of QUERIES) expect(await s.search("o", q), JSON.stringify(q)).toEqual(await mem.search("o", q));
          expect(await searchRows(client, schema)).toEqual(await messageRows(client, schema));
          expect((await searchRows(client, schema)).some((r) => r.startsWith(`o/${messages[6].message_id}/`))).toBe(
            false,
          );

          // Adoption moves the search rows with the messages, in the same transaction.
          await s.adoptOwner("o", "p");
          expect(await s.search("o", { query: "alpha", scope: "all", limit: 5 })).toEqual([]);
          expect(await foundIds(s, "p", { query: "zeppelin", scope: "all", limit: 5 })).toEqual([edited.message_id]);
          expect((await searchRows(client, schema)).every((r) => r.startsWith("p/"))).toBe(true);
          expect(await searchRows(client, schema)).toEqual(await messageRows(client, schema));
        });
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
      const schema = schemas.fresh();
      await withClient(async (client) => {
        // Common enough (150 each) that the planner expects more than FEW matches: SQL ranks them on `folded`.
        const texts = ["नमस्ते दुनिया", "שָׁלוֹם חברים", "Zu\u0308rich und Zürich", "Xin chào Việt Nam"];
        const marked = Array.from({ length: 600 }, (_, i) =>
          msg(`x${i}`, { text: texts[i % 4], ts: 200 + i, chat_id: `c${i % 3}` }),
        );
        const messages = [...history(), ...marked];
        await schemaAtVersion(client, schema, 5);
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
        const s = await schemas.open(schema);
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
      });
    });
  },
);
