/**
 * Conformance of search (word and accent-insensitive matching, ranking, scope, snippets): the
 * storage's own when it has the `search` capability, the core's fallback otherwise. Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import { A, capabilityLabel, channel, ids, msg, thread } from "./storage-records.js";

type Search = (query: string, extra?: Partial<Parameters<Storage["search"]>[1]>) => ReturnType<Storage["search"]>;

/** Declares the search tests; `current` gives the storage of the running test. */
export function describeSearchConformance(current: () => Storage, native: boolean): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describe(capabilityLabel("search", native), () => {
    beforeEach(async () => {
      // The lanes the tests write to exist, as they always do behind a gateway: the fallback finds
      // messages through their channels.
      await storage.commit(A, { channels: [channel("c1"), channel("c2"), thread("t1", "c1"), thread("t2", "c1")] });
    });

    const search: Search = (query, extra = {}) => storage.search(A, { query, scope: "all", limit: 20, ...extra });
    describeWordMatching(() => storage, search);
    describeQueryLikeInput(() => storage, search);
    describeScopeRankingSnippets(() => storage, search);
  });
}

/** Which messages a query finds: words, case, diacritics, combining marks, prefixes. */
function describeWordMatching(use: () => Storage, search: Search): void {
  test("search - finds words across the owner's messages with the hit's fields", async () => {
    await use().commit(A, {
      messages: [
        msg("m1", { text: "The quick brown fox", role: "assistant", ts: 100 }),
        msg("m2", { text: "lazy dog", thread_id: "t1", ts: 200 }),
      ],
    });
    expect(await search("fox")).toEqual([
      { message_id: "m1", chat_id: "c1", thread_id: null, role: "assistant", snippet: "The quick brown fox", ts: 100 },
    ]);
    expect(await search("dog")).toEqual([
      { message_id: "m2", chat_id: "c1", thread_id: "t1", role: "user", snippet: "lazy dog", ts: 200 },
    ]);
    expect(await search("cat")).toEqual([]);
  });

  test("search - is case-insensitive and ignores diacritics both ways", async () => {
    await use().commit(A, {
      messages: [msg("m1", { text: "Un café très crème à Zürich" }), msg("m2", { text: "plain cafe" })],
    });
    expect(ids(await search("CAFE")).sort()).toEqual(["m1", "m2"]);
    expect(ids(await search("café")).sort()).toEqual(["m1", "m2"]);
    expect(ids(await search("zurich"))).toEqual(["m1"]);
    expect(ids(await search("Crème"))).toEqual(["m1"]);
  });

  test("search - a combining mark is part of its word: Hindi, pointed Hebrew and decomposed accents are found", async () => {
    await use().commit(A, {
      messages: [
        msg("hi", { text: "नमस्ते दुनिया", ts: 1 }),
        msg("he", { text: "שָׁלוֹם חברים", ts: 2 }),
        msg("nfd", { text: "Zu\u0308rich liegt am See", ts: 3 }),
        msg("vi", { text: "Xin chào Việt Nam", ts: 4 }),
      ],
    });
    expect(ids(await search("नमस्ते"))).toEqual(["hi"]);
    expect(ids(await search("दुनिया नमस्ते"))).toEqual(["hi"]);
    expect(ids(await search("שָׁלוֹם"))).toEqual(["he"]);
    expect(ids(await search("Zürich"))).toEqual(["nfd"]);
    expect(ids(await search("Zu\u0308ri"))).toEqual(["nfd"]);
    expect(await search("rich")).toEqual([]);
    expect(ids(await search("Việt"))).toEqual(["vi"]);
    expect((await search("नमस्ते"))[0]?.snippet).toBe("नमस्ते दुनिया");
  });

  test("search - matches word prefixes, not word middles", async () => {
    await use().commit(A, {
      messages: [msg("m1", { text: "configuration management" }), msg("m2", { text: "reconfigure" })],
    });
    expect(ids(await search("config"))).toEqual(["m1"]);
    expect(ids(await search("manag conf"))).toEqual(["m1"]);
    expect(await search("uration")).toEqual([]);
  });
}

/** Input that is not plain words: query syntax is searched as words, blank input finds nothing. */
function describeQueryLikeInput(use: () => Storage, search: Search): void {
  test("search - input that looks like query syntax is searched as plain words", async () => {
    await use().commit(A, {
      messages: [msg("m1", { text: 'use AND or NOT near the foo-bar (quoted) "text" with c++ and 2*3' })],
    });
    for (const q of [
      '"foo',
      "foo AND",
      "NOT foo",
      "foo OR",
      "(foo",
      "foo*",
      "-foo",
      "foo:bar",
      "NEAR/2 foo",
      "^foo",
      "foo'bar",
      "c++",
      "2*3",
    ]) {
      expect(ids(await search(q)), q).toEqual(["m1"]);
    }
  });

  test("search - blank-ish input gives no hits and never fails", async () => {
    await use().commit(A, { messages: [msg("m1", { text: "some words * here" })] });
    for (const q of ["*", '"', "()", " - ", "\u0301", "...", "''", "\t\n"]) {
      expect(await search(q), JSON.stringify(q)).toEqual([]);
    }
  });
}

/** Where a search looks, how many hits it gives, their order and their snippets. */
function describeScopeRankingSnippets(use: () => Storage, search: Search): void {
  test("search - chat scope covers the channel and its threads, thread scope only that thread", async () => {
    await use().commit(A, {
      messages: [
        msg("flat", { text: "needle one", ts: 1 }),
        msg("t1m", { text: "needle two", thread_id: "t1", ts: 2 }),
        msg("t2m", { text: "needle three", thread_id: "t2", ts: 3 }),
        msg("c2m", { text: "needle four", chat_id: "c2", ts: 4 }),
      ],
    });
    expect(ids(await search("needle"))).toEqual(["c2m", "t2m", "t1m", "flat"]);
    expect(ids(await search("needle", { scope: "chat", chat_id: "c1" }))).toEqual(["t2m", "t1m", "flat"]);
    expect(ids(await search("needle", { scope: "chat", chat_id: "c1", thread_id: "t1" }))).toEqual(["t1m"]);
    expect(ids(await search("needle", { scope: "chat", chat_id: "c2" }))).toEqual(["c2m"]);
  });

  test("search - returns at most limit hits", async () => {
    await use().commit(A, {
      messages: Array.from({ length: 30 }, (_, i) => msg(`m${i}`, { text: `common word ${i}`, ts: i })),
    });
    const hits = await search("common", { limit: 7 });
    expect(ids(hits)).toEqual(["m29", "m28", "m27", "m26", "m25", "m24", "m23"]);
    expect(await search("common", { limit: 1 })).toHaveLength(1);
  });

  test("search - ranks more matched words first, then more occurrences, then newest", async () => {
    await use().commit(A, {
      messages: [
        msg("both", { text: "alpha and beta together", ts: 1 }),
        msg("alpha-thrice", { text: "alpha alpha alpha", ts: 2 }),
        msg("alpha-once-old", { text: "alpha only", ts: 3 }),
        msg("alpha-once-new", { text: "only alpha", ts: 4 }),
        msg("none", { text: "gamma", ts: 5 }),
      ],
    });
    expect(ids(await search("alpha beta"))).toEqual(["both", "alpha-thrice", "alpha-once-new", "alpha-once-old"]);
  });

  test("search - each step ranks the newest 1,000 matches: an older, better match past them is not found", async () => {
    const n = LIMITS.searchCandidates;
    const newer = Array.from({ length: n }, (_, i) => msg(`w${i}`, { text: `alpha ${i}`, ts: 2 + i }));
    await use().commit(A, { messages: [msg("old-best", { text: "alpha alpha alpha beta", ts: 1 }), ...newer] });
    // Its three occurrences would rank it first, but 1,000 newer messages match.
    expect(ids(await search("alpha", { limit: 2 }))).toEqual([`w${n - 1}`, `w${n - 2}`]);
    // With every word it is among the newest 1,000 such matches (the only one), so it leads.
    expect(ids(await search("alpha beta", { limit: 2 }))).toEqual(["old-best", `w${n - 1}`]);
  });

  test("search - snippet is at most 200 characters with context around the first hit", async () => {
    const long = `${"lorem ipsum ".repeat(60)}the needle sits here ${"dolor sit amet ".repeat(60)}`;
    await use().commit(A, {
      messages: [msg("long", { text: long }), msg("start", { text: `needle first ${"x".repeat(500)}` })],
    });
    const hits = await search("needle");
    expect(hits).toHaveLength(2);
    for (const h of hits) {
      expect(h.snippet.length).toBeLessThanOrEqual(LIMITS.snippetMax);
      expect(h.snippet.length).toBeGreaterThan(20);
      expect(h.snippet).toContain("needle");
    }
    const deep = hits.find((h) => h.message_id === "long")!;
    expect(deep.snippet).toMatch(/ipsum.*needle sits here.*dolor/);
  });

  test("search - snippet keeps the original accents", async () => {
    await use().commit(A, { messages: [msg("m1", { text: "Déjà vu" })] });
    expect((await search("deja"))[0].snippet).toBe("Déjà vu");
  });
}
