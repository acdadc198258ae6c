import type { SearchHit, SearchQuery, StoredMessage } from "chat-gateway";
import { LIMITS } from "chat-gateway";

const WORD = /[\p{L}\p{N}]+/gu;
/** Characters of context kept before the first hit in a snippet. */
const LEAD = 60;

/** Lower case without diacritics, so `Café` and `cafe` compare equal. */
export function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}+/gu, "").toLowerCase();
}

/** The distinct folded words of user input; punctuation and operators are separators, never syntax. */
export function queryTerms(query: string): string[] {
  return [...new Set(fold(query).match(WORD) ?? [])];
}

/**
 * At most {@link LIMITS.snippetMax} characters of `text` around `at`, with an ellipsis where text
 * was cut, whitespace runs collapsed so a snippet reads as one line.
 */
export function snippetAround(text: string, at: number): string {
  const max = LIMITS.snippetMax;
  const flat = text.replace(/\s+/g, " ");
  // Collapsing whitespace shifts offsets; recompute the hit position on the collapsed text.
  const pos = text.slice(0, at).replace(/\s+/g, " ").length;
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

interface Scored {
  message: StoredMessage;
  terms: number;
  hits: number;
  first: number;
}

function score(message: StoredMessage, terms: string[]): Scored | undefined {
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

/**
 * Word and prefix search over messages: every query word matches words that start with it.
 * Ranked by how many query words matched, then by occurrences, then newest first.
 */
export function searchMessages(messages: Iterable<StoredMessage>, query: SearchQuery): SearchHit[] {
  const terms = queryTerms(query.query);
  if (!terms.length || query.limit < 1) return [];
  const found: Scored[] = [];
  for (const m of messages) {
    if (query.scope === "chat") {
      if (query.thread_id !== undefined ? m.thread_id !== query.thread_id : m.chat_id !== query.chat_id) continue;
    }
    const s = score(m, terms);
    if (s) found.push(s);
  }
  found.sort(
    (a, b) =>
      b.terms - a.terms ||
      b.hits - a.hits ||
      b.message.ts - a.message.ts ||
      (a.message.message_id < b.message.message_id ? 1 : a.message.message_id > b.message.message_id ? -1 : 0),
  );
  return found.slice(0, query.limit).map(({ message: m, first }) => ({
    message_id: m.message_id,
    chat_id: m.chat_id,
    thread_id: m.thread_id,
    role: m.role,
    snippet: snippetAround(m.text, first),
    ts: m.ts,
  }));
}
