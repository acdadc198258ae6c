// PostgreSQL search walks the newest messages when a word is common: in a chat or thread through
// messages_chat_recent, across all chats through messages_recent, finding what GIN and the memory
// storage find.
import { describe, expect, test } from "vitest";
import type { SearchQuery } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import {
  candidatesQuery,
  estimatesQuery,
  plannedRows,
  totalQuery,
  walkQuery,
} from "../../adapters/storage/postgres/search.js";
import { rankQuery } from "../../adapters/storage/postgres/search-rank.js";
import { CANDIDATES, WALK_FROM, WALK_WINDOW, walksAllChats } from "../../adapters/storage/postgres/search-plan.js";
import { postgresAvailable } from "../fixtures/services.js";
import { msg, planOf, postgresSchemas, withClient } from "./postgres-helpers.js";

const available = await postgresAvailable("storage: postgres search walk");

describe.skipIf(!available)(
  "postgres storage - chat and thread search walks the newest messages; the search table",
  () => {
    const schemas = postgresSchemas();

    test("postgres - a word in most of a chat or thread, or in its older part only, finds what the memory storage finds, the walk through messages_chat_recent", async () => {
      const schema = schemas.fresh();
      const pgStore = await schemas.open(schema);
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
      await withClient(async (client) => {
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
        const plan = await planOf(client, statement);
        expect(plan).toContain("Index Scan Backward using messages_chat_recent");
        expect(plan).not.toContain("Sort");
      });
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
      const schema = schemas.fresh();
      const pgStore = await schemas.open(schema);
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
      await withClient(async (client) => {
        await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
        const s = `"${schema}"`;
        const q: SearchQuery = { query: "alpha", scope: "all", limit: 20 };
        const total = plannedRows((await client.query(totalQuery(s))).rows[0]);
        const alpha = plannedRows((await client.query(estimatesQuery(s, q, ["alpha"]))).rows[0]);
        expect(walksAllChats(alpha, total)).toBe(true);
        const walk = candidatesQuery(s, "wide", q, ["alpha"], "all", CANDIDATES, { newest: true });
        const plan = await planOf(client, walk);
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
      });
      for (const query of ["alpha", "alpha zzz", "alph beta", "alpha other"]) {
        for (const limit of [3, 40]) {
          const q: SearchQuery = { query, limit, scope: "all" };
          const found = await pgStore.search("wide", q);
          expect(found.length, JSON.stringify(q)).toBe(limit);
          expect(found, JSON.stringify(q)).toEqual(await mem.search("wide", q));
        }
      }
    });
  },
);
