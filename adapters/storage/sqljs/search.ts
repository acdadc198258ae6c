import type { Owner, SearchHit, SearchQuery } from "chat-gateway";
import { compareMatches, foldText, matchText, searchTerms, snippetAround } from "chat-gateway";
import { shardsNewestFirst } from "./fts-shards.js";
import type { Sql } from "./sql.js";

/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/** Matches ranked per query step; see {@link search}. */
const CANDIDATES = 1000;

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
 * FTS4 queries for user text within a lane token: each word a prefix term of the text column, so
 * no input is ever parsed as FTS syntax. `all` needs every word, `any` one of them.
 */
export function matchExpressions(query: string, lane?: string): { all: string; any: string; terms: number } | undefined {
  const terms = searchTerms(query, MAX_TERMS);
  if (!terms.length) return undefined;
  // Terms are letters and digits only, and lower case, so none can be an operator (those are upper
  // case); FTS4 refuses a column filter on a quoted phrase inside parentheses, so they stay bare.
  const phrases = terms.map((t) => `text:${t}*`);
  const within = lane ? ` lane:${lane}` : "";
  return { all: `${phrases.join(" ")}${within}`, any: `(${phrases.join(" OR ")})${within}`, terms: terms.length };
}

/** Query words matched and their occurrences in the text column (column 0), from `matchinfo(…, 'pcy')`. */
function rank(info: Uint8Array): { terms: number; hits: number } {
  // matchinfo is an array of native-endian uint32; wasm is little-endian.
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  const u32 = (i: number) => view.getUint32(i * 4, true);
  const phrases = u32(0);
  const columns = u32(1);
  let terms = 0;
  let hits = 0;
  for (let p = 0; p < phrases; p++) {
    const inRow = u32(2 + p * columns);
    if (inRow > 0) terms++;
    hits += inRow;
  }
  return { terms, hits };
}

/**
 * At most 200 characters of `text` as one line, starting a little before the
 * first word that matches the query, with an ellipsis where text was cut. Built here rather than
 * with FTS4's `snippet()`, which re-evaluates the whole match for every row it is asked about
 * (about 2 ms per hit for a common word at 100,000 messages).
 */
function snippetOf(text: string, terms: string[]): string {
  const trimmed = text.trim();
  return snippetAround(trimmed, matchText(trimmed, terms)?.first ?? 0);
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
 * Snippets are built only for the hits returned.
 */
export function search(sql: Sql, owner: Owner, q: SearchQuery): SearchHit[] {
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
  const match = matchExpressions(q.query, lane);
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
        found.push({ id: id as number, ts: ts as number, message_id: messageId as string, ...rank(info as Uint8Array) });
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
  if (top.length < q.limit && match.terms > 1) {
    const seen = new Set(top.map((r) => r.id));
    top = top.concat(
      candidates(match.any)
        .filter((r) => !seen.has(r.id))
        .sort(byRank)
        .slice(0, q.limit - top.length),
    );
  }
  const terms = searchTerms(q.query, MAX_TERMS);
  return top.map(({ id }) => {
    const [messageId, chatId, threadKey, role, ts, text] = sql.get("SELECT message_id, chat_id, thread_key, role, ts, text FROM messages WHERE id = ?", [id])!;
    return {
      message_id: messageId as string,
      chat_id: chatId as string,
      thread_id: (threadKey as string) || null,
      role: role as SearchHit["role"],
      snippet: snippetOf(text as string, terms),
      ts: ts as number,
    };
  });
}
