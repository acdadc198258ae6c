/**
 * Text helpers every storage's search shares, so that memory, sql.js and PostgreSQL agree on what
 * a word is, how hits rank and how snippets read.
 * @module
 */
import { LIMITS } from "./limits.js";

/**
 * A word: a run of letters and digits with their combining marks. Everything else (punctuation,
 * operators) separates words. A mark belongs to its word, never splits it: Hindi's vowel signs,
 * Hebrew's points and a decomposed `é` (`e` and U+0301) are inside words.
 */
export const WORD_PATTERN = /[\p{L}\p{N}\p{M}]+/gu;

/** Characters of context kept before the first hit in a snippet. */
const SNIPPET_LEAD = 60;

/** Lower case without diacritics, so `Café` and `cafe` compare equal. */
export function foldText(text: string): string {
  return text
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();
}

/** The distinct folded words of user input, at most `max`: user text is words, never syntax. */
export function searchTerms(query: string, max = 16): string[] {
  return [...new Set(foldText(query).match(WORD_PATTERN) ?? [])].slice(0, max);
}

/** How well a text matches: query words matched, word occurrences matched, offset of the first. */
export interface TextMatch {
  terms: number;
  hits: number;
  first: number;
}

/** Match `text` against folded terms, each a word prefix; undefined when nothing matches. */
export function matchText(text: string, terms: readonly string[]): TextMatch | undefined {
  const seen = new Set<string>();
  let hits = 0;
  let first = -1;
  for (const match of text.matchAll(WORD_PATTERN)) {
    const word = foldText(match[0]);
    for (const term of terms) {
      if (word.startsWith(term)) {
        seen.add(term);
        hits++;
        if (first < 0) first = match.index;
      }
    }
  }
  return seen.size ? { terms: seen.size, hits, first } : undefined;
}

/**
 * Characters of a text that {@link firstMatch} looks through: a snippet then costs the same in a
 * message of any length (docs/PROTOCOL.md §5).
 */
export const SNIPPET_SCAN = 16 * 1024;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the whole ASCII range, control characters included
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Offset of the first word of `text` that starts with one of the folded `terms`, looking only at
 * its first {@link SNIPPET_SCAN} characters; undefined when none is there. What a snippet is built
 * around: a hit further into a long message gets a snippet of its start.
 */
export function firstMatch(text: string, terms: readonly string[]): number | undefined {
  const window = text.length > SNIPPET_SCAN ? text.slice(0, SNIPPET_SCAN) : text;
  for (const match of window.matchAll(WORD_PATTERN)) {
    // An ASCII word folds to its lower case; normalising it would cost the most of the scan.
    const word = ASCII.test(match[0]) ? match[0].toLowerCase() : foldText(match[0]);
    if (terms.some((term) => word.startsWith(term))) return match.index;
  }
  return undefined;
}

/** Best match first: most query words, then most occurrences, then newest, then by id. */
export function compareMatches(
  a: { terms: number; hits: number; ts: number; message_id: string },
  b: { terms: number; hits: number; ts: number; message_id: string },
): number {
  return (
    b.terms - a.terms ||
    b.hits - a.hits ||
    b.ts - a.ts ||
    (a.message_id < b.message_id ? 1 : a.message_id > b.message_id ? -1 : 0)
  );
}

/** Characters on either side of a snippet's hit that are looked at: a snippet is 200 of them. */
const SNIPPET_WINDOW = 1000;

/**
 * At most 200 characters of `text` around offset `at` on one line (whitespace runs collapsed),
 * starting at a word boundary, with an ellipsis where text was cut. Only the text within 1,000
 * characters of `at` is looked at, so a long message costs no more.
 */
export function snippetAround(text: string, at: number): string {
  const max = LIMITS.snippetMax;
  at = Math.max(0, Math.min(at, text.length));
  const from = Math.max(0, at - SNIPPET_WINDOW);
  const to = Math.min(text.length, at + SNIPPET_WINDOW);
  const window = text.slice(from, to);
  const flat = window.replace(/\s+/g, " ");
  // Collapsing whitespace shifts offsets; recompute the hit's position on the collapsed text.
  const pos = window.slice(0, at - from).replace(/\s+/g, " ").length;
  if (flat.length <= max && from === 0 && to === text.length) return flat;
  let start = Math.max(0, pos - SNIPPET_LEAD);
  if (start > 0) {
    const space = flat.indexOf(" ", start - 1);
    if (space >= 0 && space < pos) start = space + 1;
  }
  if (to === text.length) start = Math.max(0, Math.min(start, flat.length - (max - 1)));
  const head = start > 0 || from > 0 ? "…" : "";
  const room = max - head.length;
  const tail = start + room < flat.length || to < text.length ? "…" : "";
  return head + flat.slice(start, start + room - tail.length) + tail;
}
