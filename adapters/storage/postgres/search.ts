import type { SearchHit, SearchQuery, StoredMessage } from "chat-gateway";
import { LIMITS } from "chat-gateway";

const WORD = /[\p{L}\p{N}]+/gu;
/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/** PostgreSQL refuses lexemes of 2 KiB and more; longer words are indexed by their start. */
const MAX_LEXEME = 256;
/** A tsvector must stay under 1 MiB; past this many bytes of lexemes the rest of a huge text is not indexed. */
const MAX_VECTOR_BYTES = 512 * 1024;
/** Characters of context kept before the first hit in a snippet. */
const LEAD = 60;

/** Lower case without diacritics, so `Café` and `cafe` compare equal (as in the other storages). */
function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}+/gu, "").toLowerCase();
}

/**
 * The lexemes of a message as tsvector input. Words are cut by the same Unicode rule as the memory
 * and sql.js storages and folded in JS, so the three agree on what a word is; PostgreSQL's
 * `to_tsvector` parser would instead keep `user@example.com` or `foo-bar` as tokens of their own.
 * Words are letters and digits only, so quoting them needs no escaping.
 */
export function tsvectorText(text: string): string {
  const seen = new Set<string>();
  let bytes = 0;
  for (const match of fold(text).matchAll(WORD)) {
    const word = match[0].slice(0, MAX_LEXEME);
    if (seen.has(word)) continue;
    bytes += Buffer.byteLength(word) + 8;
    if (bytes > MAX_VECTOR_BYTES) break;
    seen.add(word);
  }
  return [...seen].map((w) => `'${w}'`).join(" ");
}

/** The distinct folded words of user input, at most {@link MAX_TERMS}; operators are separators, never syntax. */
export function queryTerms(query: string): string[] {
  return [...new Set((fold(query).match(WORD) ?? []).map((w) => w.slice(0, MAX_LEXEME)))].slice(0, MAX_TERMS);
}

/** tsquery input for prefix matches of every term (`all`) or of any (`any`). */
export function tsqueries(terms: string[]): { all: string; any: string } {
  const prefixes = terms.map((t) => `'${t}':*`);
  return { all: prefixes.join(" & "), any: prefixes.join(" | ") };
}

/** A candidate row: what ranking and the hit need. */
export interface Candidate {
  message: Pick<StoredMessage, "message_id" | "chat_id" | "thread_id" | "role" | "ts" | "text">;
}

export interface Ranked {
  message: Candidate["message"];
  terms: number;
  hits: number;
  first: number;
}

/** Query words matched and occurrences, counted on the text itself (tsvectors here carry no positions). */
export function rank(message: Candidate["message"], terms: string[]): Ranked | undefined {
  const seen = new Set<string>();
  let hits = 0;
  let first = -1;
  for (const match of message.text.matchAll(WORD)) {
    const word = fold(match[0]);
    for (const term of terms) {
      if (word.startsWith(term)) {
        seen.add(term);
        hits++;
        if (first < 0) first = match.index;
      }
    }
  }
  return seen.size ? { message, terms: seen.size, hits, first } : undefined;
}

export const byRank = (a: Ranked, b: Ranked): number =>
  b.terms - a.terms ||
  b.hits - a.hits ||
  b.message.ts - a.message.ts ||
  (a.message.message_id < b.message.message_id ? 1 : a.message.message_id > b.message.message_id ? -1 : 0);

/** At most {@link LIMITS.snippetMax} characters of `text` around `at`, as one line, with ellipses where cut. */
export function snippetAround(text: string, at: number): string {
  const max = LIMITS.snippetMax;
  const flat = text.replace(/\s+/g, " ");
  const pos = text.slice(0, Math.max(0, at)).replace(/\s+/g, " ").length;
  if (flat.length <= max) return flat;
  let start = Math.max(0, pos - LEAD);
  if (start > 0) {
    const space = flat.indexOf(" ", start - 1);
    if (space >= 0 && space < pos) start = space + 1;
  }
  start = Math.min(start, flat.length - (max - 1));
  const head = start > 0 ? "…" : "";
  const room = max - head.length;
  const tail = start + room < flat.length ? "…" : "";
  return head + flat.slice(start, start + room - tail.length) + tail;
}

/** A ranked candidate as a search hit. */
export function toHit(r: Ranked): SearchHit {
  const m = r.message;
  return { message_id: m.message_id, chat_id: m.chat_id, thread_id: m.thread_id, role: m.role, snippet: snippetAround(m.text, r.first), ts: m.ts };
}

export type { SearchQuery };
