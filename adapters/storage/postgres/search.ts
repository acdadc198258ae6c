import type { SearchHit, SearchQuery, StoredMessage } from "chat-gateway";
import { compareMatches, foldText, matchText, snippetAround, WORD_PATTERN } from "chat-gateway";

/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/** PostgreSQL refuses lexemes of 2 KiB and more; longer words are indexed by their start. */
const MAX_LEXEME = 256;
/** A tsvector must stay under 1 MiB; past this many bytes of lexemes the rest of a huge text is not indexed. */
const MAX_VECTOR_BYTES = 512 * 1024;


/**
 * The lexemes of a message as tsvector input. Words are cut by the same Unicode rule as the memory
 * and sql.js storages and folded in JS, so the three agree on what a word is; PostgreSQL's
 * `to_tsvector` parser would instead keep `user@example.com` or `foo-bar` as tokens of their own.
 * Words are letters and digits only, so quoting them needs no escaping.
 */
export function tsvectorText(text: string): string {
  const seen = new Set<string>();
  let bytes = 0;
  for (const match of foldText(text).matchAll(WORD_PATTERN)) {
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
  return [...new Set((foldText(query).match(WORD_PATTERN) ?? []).map((w) => w.slice(0, MAX_LEXEME)))].slice(0, MAX_TERMS);
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
  const match = matchText(message.text, terms);
  return match && { message, ...match };
}

export const byRank = (a: Ranked, b: Ranked): number => compareMatches({ ...a, ...a.message }, { ...b, ...b.message });


/** A ranked candidate as a search hit. */
export function toHit(r: Ranked): SearchHit {
  const m = r.message;
  return { message_id: m.message_id, chat_id: m.chat_id, thread_id: m.thread_id, role: m.role, snippet: snippetAround(m.text, r.first), ts: m.ts };
}

export type { SearchQuery };
