import { describe, expect, test } from "vitest";
import type { SearchQuery } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { candidatesQuery } from "../../adapters/storage/postgres/search.js";
import { postgresAvailable } from "../fixtures/services.js";
import { foundIds, msg, planOf, sharedSchema, withClient } from "./postgres-helpers.js";

const available = await postgresAvailable("storage: postgres search");

describe.skipIf(!available)("postgres storage - beyond the conformance suite", () => {
  const { schema, open } = sharedSchema({ poolSize: 4 });

  test("postgres - search runs on the GIN index of the tsvector", async () => {
    const s = await open();
    await s.commit("gin", {
      messages: Array.from({ length: 50 }, (_, i) => msg(`g${i}`, { text: `plain words number ${i}` })).concat(
        msg("needle", { text: "a rare zeppelin" }),
      ),
    });
    expect(await foundIds(s, "gin", { query: "zep", scope: "all", limit: 5 })).toEqual(["needle"]);
    await withClient(async (client) => {
      await client.query("SET enable_seqscan = off");
      const plan = await planOf(client, {
        text: `SELECT message_id FROM "${schema}".message_search WHERE words @@ $1::tsquery`,
        values: ["'zep':*"],
      });
      expect(plan).toContain("messages_words");
    });
  });

  test("postgres - a common word is walked newest first through messages_recent, a rare one read through GIN and never walked, a scoped one by its lane lexemes", async () => {
    const s = await open();
    // A varied vocabulary, so that the planner's statistics on the words are as on real text.
    const colours = ["red", "green", "blue", "cyan", "gray"];
    const text = (i: number) => `common ${colours[i % 5]}${i % 150} word ${i}${i === 7 ? " rarity" : ""}`;
    await s.commit("walk", {
      messages: Array.from({ length: 3000 }, (_, i) =>
        msg(`w${i}`, { text: text(i), ts: i, chat_id: `c${i % 3}`, thread_id: i % 10 === 0 ? "t1" : null }),
      ),
    });
    await withClient(async (client) => {
      await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
      const plan = async (query: string, scope: Partial<SearchQuery> = {}, newest = false) => {
        const statement = candidatesQuery(
          `"${schema}"`,
          "walk",
          { query, scope: "all", limit: 20, ...scope },
          [query],
          "all",
          1000,
          { newest },
        );
        return planOf(client, statement);
      };
      expect(await plan("common", {}, true)).toContain("Index Scan Backward using messages_recent");
      expect(await plan("rarity")).toContain("messages_words");
      // Without the walk asked for, no plan walks, even for the word in every message: a prepared
      // statement's kept plan must not walk the whole history for a rare word.
      expect(await plan("common")).not.toContain("messages_recent");
      // A chat's lane-qualified lexeme: GIN, or on a table this small a scan; never the unscoped word.
      expect(await plan("common", { scope: "chat", chat_id: "c1" })).toContain(`'#c`);
    });
    expect(await foundIds(s, "walk", { query: "rarity", scope: "all", limit: 5 })).toEqual(["w7"]);
    expect(await foundIds(s, "walk", { query: "common", scope: "all", limit: 2 })).toEqual(["w2999", "w2998"]);
    expect(await foundIds(s, "walk", { query: "common", scope: "chat", chat_id: "c1", limit: 3 })).toEqual([
      "w2998",
      "w2995",
      "w2992",
    ]);
    expect(
      await foundIds(s, "walk", { query: "com red", scope: "chat", chat_id: "c0", thread_id: "t1", limit: 2 }),
    ).toEqual(["w2990", "w2980"]);
  });

  test("postgres - search ranks and snips as the memory storage does, on ASCII and non-ASCII text alike", async () => {
    const pgStore = await open();
    const mem = memoryStorage();
    const words = [
      "alpha",
      "Alphabet",
      "ALPHA",
      "beta",
      "xalpha",
      "al-pha",
      "alpha.beta",
      "café",
      "Cafe\u0301",
      "Ärger",
      "arg",
      "2024",
      "v2",
      "naïve",
      "naive",
      "ﬁne",
      "İstanbul",
      "istanbul",
    ];
    const messages = Array.from({ length: 400 }, (_, i) => {
      const text = Array.from({ length: 3 + (i % 7) }, (_, k) => words[(i * 7 + k * 5) % words.length]).join(
        i % 3 ? " " : "  \n ",
      );
      return msg(`r${String(i).padStart(3, "0")}`, {
        text,
        ts: 1000 + (i % 50),
        chat_id: `c${i % 4}`,
        thread_id: i % 5 === 0 ? `t${i % 2}` : null,
      });
    });
    await pgStore.commit("rank", { messages });
    await mem.commit("rank", { messages });
    for (const query of [
      "alpha",
      "al",
      "alpha beta",
      "CAFÉ",
      "arg",
      "2024 v",
      "naive",
      "fine",
      "istanbul",
      "x",
      "beta zzz",
    ]) {
      for (const scope of [
        { scope: "all" as const },
        { scope: "chat" as const, chat_id: "c1" },
        { scope: "chat" as const, chat_id: "c0", thread_id: "t0" },
      ]) {
        for (const limit of [3, 50]) {
          const q = { query, limit, ...scope };
          expect(await pgStore.search("rank", q), JSON.stringify(q)).toEqual(await mem.search("rank", q));
        }
      }
    }
  });

  test("postgres - a message with more distinct words than a tsvector holds is stored, and its first words are found in every scope", async () => {
    const s = await open();
    const words = Array.from({ length: 60_000 }, (_, i) => `w${i.toString(36)}x`);
    await s.commit("huge", {
      messages: [msg("big", { text: `opening ${words.join(" ")}`, chat_id: "c9", thread_id: "t9" })],
    });
    for (const scope of [
      { scope: "all" as const },
      { scope: "chat" as const, chat_id: "c9" },
      { scope: "chat" as const, chat_id: "c9", thread_id: "t9" },
    ]) {
      expect(await foundIds(s, "huge", { query: "opening w1x", limit: 5, ...scope }), JSON.stringify(scope)).toEqual([
        "big",
      ]);
    }
  });
});
