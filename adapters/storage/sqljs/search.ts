import type { Owner, SearchHit } from "chat-gateway";
import type { SearchQuery } from "chat-gateway/storage";
import {
  compareMatches,
  firstMatch,
  foldText,
  searchTerms,
  SNIPPET_SCAN,
  snippetAround,
  WORD_PATTERN,
} from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import { shardsNewestFirst } from "./fts-shards.js";
import type { Sql } from "./sql.js";

/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/** Matches ranked per query step (docs/PROTOCOL.md §5); see {@link search}. */
const CANDIDATES = LIMITS.searchCandidates;

/** 64-bit FNV-1a of the UTF-16 units as 16 hex digits: stable across versions, since it is stored. */
function hash(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) h = ((h ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, "0");
}

/** The token of a chat in the `lane` column; letters and digits only, so the tokenizer keeps it whole. */
export function chatToken(owner: string, chatId: string): string {
  return `c${hash(`${owner}\u0000${chatId}`)}`;
}

/** The token of a thread in the `lane` column. */
export function threadToken(owner: string, threadId: string): string {
  return `t${hash(`${owner}\u0000${threadId}`)}`;
}

/**
 * A message's `lane` column: its chat's token and, in a thread, the thread's. A hash collision only
 * widens the FTS step, since the SQL scope condition still applies. There is no owner token: every
 * message of an owner would share it, and intersecting with that doclist costs more (50 ms for a
 * rare word at a million messages) than filtering the few matches by owner.
 */
export function laneColumn(owner: string, chatId: string, threadId: string | null): string {
  return threadId === null ? chatToken(owner, chatId) : `${chatToken(owner, chatId)} ${threadToken(owner, threadId)}`;
}

/**
 * The table's tokenizer as a table: what it makes of a query word. Temporary, so never in a
 * snapshot; created on the first search of a word that is not ASCII.
 */
const TOKENIZER = `CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts3tokenize(unicode61, "remove_diacritics=1")`;
const ASCII_WORD = /^[A-Za-z0-9]+$/;

/**
 * Each word of the query as the FTS4 tokens the text column holds for it, one word per folded form
 * (the words of `searchTerms`, in query order, at most {@link MAX_TERMS}). The tokenizer
 * (unicode61) cuts a Hindi, Thai or pointed Hebrew word into pieces at its marks and keeps what a
 * JS fold would drop, so a word is asked for as its pieces, cut by the tokenizer itself: folded in
 * JS first, it would match nothing. An ASCII word is one token, its lower case.
 */
export function queryWords(sql: Sql, query: string): string[][] {
  const byFold = new Map<string, string>();
  for (const [word] of query.matchAll(WORD_PATTERN)) {
    const folded = foldText(word);
    if (folded && !byFold.has(folded)) byFold.set(folded, word);
  }
  const words: string[][] = [];
  let tokenizer = false;
  for (const word of [...byFold.values()].slice(0, MAX_TERMS)) {
    if (ASCII_WORD.test(word)) {
      words.push([word.toLowerCase()]);
      continue;
    }
    if (!tokenizer) sql.run(TOKENIZER);
    tokenizer = true;
    const tokens = sql
      .all("SELECT token FROM temp.query_tokens WHERE input = ?", [word])
      .map(([token]) => token as string);
    if (tokens.length) words.push(tokens);
  }
  return words;
}

/**
 * FTS4 queries for the query's words ({@link queryWords}) within a lane token: `all` needs every
 * word, `any` one of them; a word is all its pieces, the last a prefix. `pieces` is each word's
 * count of phrases, in the order `matchinfo` reports them.
 */
export function matchExpressions(
  words: string[][],
  lane?: string,
): { all: string; any: string; pieces: number[] } | undefined {
  if (!words.length) return undefined;
  // Tokens are letters and digits, and lower case, so none can be an operator (those are upper
  // case); FTS4 refuses a column filter on a quoted phrase inside parentheses, so they stay bare.
  const phrases = words.map((tokens) =>
    tokens.map((t, i) => `text:${t}${i === tokens.length - 1 ? "*" : ""}`).join(" "),
  );
  const within = lane ? ` lane:${lane}` : "";
  return {
    all: `${phrases.join(" ")}${within}`,
    any: `(${phrases.join(" OR ")})${within}`,
    pieces: words.map((w) => w.length),
  };
}

/**
 * Query words matched and their occurrences in the text column (column 0), from `matchinfo(…,
 * 'pcy')`: a word is matched where all its pieces are, as often as its rarest piece.
 */
function rank(info: Uint8Array, pieces: number[]): { terms: number; hits: number } {
  // matchinfo is an array of native-endian uint32; wasm is little-endian.
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  const u32 = (i: number) => view.getUint32(i * 4, true);
  const columns = u32(1);
  let terms = 0;
  let hits = 0;
  let phrase = 0;
  for (const count of pieces) {
    let inRow = Infinity;
    for (let p = phrase; p < phrase + count; p++) inRow = Math.min(inRow, u32(2 + p * columns));
    phrase += count;
    if (inRow > 0) terms++;
    hits += inRow;
  }
  return { terms, hits };
}

/** Characters of a text read for its snippet: what `firstMatch` looks through and a window after it. */
const SNIPPET_READ = SNIPPET_SCAN + 4096;

/**
 * At most 200 characters of `text` as one line, starting a little before the first word that
 * matches the query (within the text's first `SNIPPET_SCAN` characters), with an ellipsis where
 * text was cut. Built here rather than with FTS4's `snippet()`, which re-evaluates the whole match
 * for every row it is asked about (about 2 ms per hit for a common word at 100,000 messages).
 * `text` is at most {@link SNIPPET_READ} + 1 characters of the message: longer means cut.
 */
function snippetOf(text: string, terms: string[]): string {
  const cut = text.length > SNIPPET_READ;
  // A cut text keeps its end: it is no end of the message, and its ellipsis depends on that.
  const trimmed = cut ? text.trimStart() : text.trim();
  return snippetAround(trimmed, firstMatch(trimmed, terms) ?? 0);
}

interface Ranked {
  id: number;
  ts: number;
  message_id: string;
  terms: number;
  hits: number;
}

const byRank = compareMatches;

/**
 * Full-text search with FTS4, best match first: most query words matched, then most occurrences,
 * then newest. Messages matching every word are looked for first, then those matching any. Each
 * step ranks at most the newest {@link CANDIDATES} matches in scope, so a common word costs about
 * the same at any history size; below that many matches the ranking is exact. The index is split
 * in shards by message row (see `SHARD_DOCS`), walked newest first. A chat or thread
 * scope is a lane token matched inside FTS4, so it does not walk the owner's other matches.
 */
export function search(sql: Sql, owner: Owner, q: SearchQuery): SearchHit[] {
  return searchHits(sql, owner, searchRanked(sql, owner, q), q.query);
}

/**
 * The hits of {@link search} without their snippets: each as its row id and message id, best
 * first. Ranking reads only the index; a snippet reads its message's text, which is why the
 * database process asks for snippets apart, a few hits at a time ({@link searchHits}).
 */
export function searchRanked(sql: Sql, owner: Owner, q: SearchQuery): Array<[number, string]> {
  if (q.limit < 1) return [];
  let scope = "";
  const scopeParams: string[] = [owner];
  let lane: string | undefined;
  if (q.scope === "chat" && q.thread_id !== undefined) {
    scope = " AND m.thread_key = ?";
    scopeParams.push(q.thread_id);
    lane = threadToken(owner, q.thread_id);
  } else if (q.scope === "chat") {
    scope = " AND m.chat_id = ?";
    scopeParams.push(q.chat_id ?? "");
    lane = chatToken(owner, q.chat_id ?? "");
  }
  const match = matchExpressions(queryWords(sql, q.query), lane);
  if (!match) return [];
  // Shards newest first, each walked newest docid first, until CANDIDATES matches: the same newest
  // matches one big index would give. CROSS JOIN pins the full-text index as the outer loop; left
  // to itself the planner may scan the owner's messages and evaluate MATCH once per row.
  const shards = shardsNewestFirst(sql);
  const candidates = (expr: string): Ranked[] => {
    const found: Ranked[] = [];
    for (const table of shards) {
      const rows = sql.all(
        `SELECT m.id, m.ts, m.message_id, matchinfo(${table}, 'pcy') FROM ${table} CROSS JOIN messages m ON m.id = ${table}.docid
         WHERE ${table} MATCH ? AND m.owner = ?${scope} ORDER BY ${table}.docid DESC LIMIT ?`,
        [expr, ...scopeParams, CANDIDATES - found.length],
      );
      for (const [id, ts, messageId, info] of rows) {
        found.push({
          id: id as number,
          ts: ts as number,
          message_id: messageId as string,
          ...rank(info as Uint8Array, match.pieces),
        });
      }
      if (found.length >= CANDIDATES) break;
    }
    return found;
  };

  let top: Ranked[];
  try {
    top = candidates(match.all).sort(byRank).slice(0, q.limit);
  } catch (error) {
    // Terms are sanitised, so this is a tokenizer edge case: no hits rather than a failed search.
    if (/malformed MATCH/.test((error as Error).message)) return [];
    throw error;
  }
  if (top.length < q.limit && match.pieces.length > 1) {
    const seen = new Set(top.map((r) => r.id));
    top = top.concat(
      candidates(match.any)
        .filter((r) => !seen.has(r.id))
        .sort(byRank)
        .slice(0, q.limit - top.length),
    );
  }
  return top.map((r) => [r.id, r.message_id]);
}

/**
 * The hits for rows of {@link searchRanked}, in that order, with their snippets. A row whose
 * message is gone (deleted since it was ranked) is left out. A snippet reads at most
 * {@link SNIPPET_READ} characters of its text (the database still loads the whole value: about
 * 1 ms for a message of 1 MiB).
 */
export function searchHits(sql: Sql, owner: Owner, rows: Array<[number, string]>, query: string): SearchHit[] {
  const terms = searchTerms(query, MAX_TERMS);
  const hits: SearchHit[] = [];
  for (const [id, messageId] of rows) {
    const row = sql.get(
      "SELECT chat_id, thread_key, role, ts, substr(text, 1, ?) FROM messages WHERE id = ? AND owner = ? AND message_id = ?",
      [SNIPPET_READ + 1, id, owner, messageId],
    );
    if (!row) continue;
    const [chatId, threadKey, role, ts, text] = row;
    hits.push({
      message_id: messageId,
      chat_id: chatId as string,
      thread_id: (threadKey as string) || null,
      role: role as SearchHit["role"],
      snippet: snippetOf(text as string, terms),
      ts: ts as number,
    });
  }
  return hits;
}
