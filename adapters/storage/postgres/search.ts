import { createHash } from "node:crypto";
import type { ChatId, Owner, SearchHit, StoredMessage } from "chat-gateway";
import type { SearchQuery } from "chat-gateway/storage";
import { compareMatches, foldText, matchText, snippetAround, WORD_PATTERN, type TextMatch } from "chat-gateway/storage";

/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/** PostgreSQL refuses lexemes of 2 KiB and more; longer words are indexed by their start. */
const MAX_LEXEME = 256;
/** A tsvector must stay under 1 MiB; past this many bytes of lexemes the rest of a huge text is not indexed. */
const MAX_VECTOR_BYTES = 512 * 1024;
/**
 * Bytes of `folded` up to which `words` holds every one of its words (cut to {@link MAX_LEXEME}):
 * a word takes at least 2 bytes of `folded` (its space and a byte) and at most 4.5 times that of
 * the {@link MAX_VECTOR_BYTES} budget (its bytes and 8), so the budget cannot run out before.
 */
export const WHOLLY_INDEXED_BYTES = Math.floor((MAX_VECTOR_BYTES * 2) / 9);
/** Hex digits of the MD5 of a chat or thread id in its lane token. */
const LANE_HASH_HEX = 12;

/**
 * The prefix that qualifies a lexeme with the chat (`c`) or thread (`t`) of its message, so that a
 * scoped search asks the GIN index for `'#c…:word':*` and gets that chat's matches only, however
 * common the word is elsewhere. `#` and `:` never occur in a word, so no query term can reach these
 * lexemes unscoped. The hash is of the id's UTF-8 bytes, as the version 3 migration computes it in
 * SQL; a collision only widens the index step, since the chat or thread column is compared too.
 */
export function laneToken(kind: "c" | "t", id: string): string {
  return `#${kind}${createHash("md5").update(id, "utf8").digest("hex").slice(0, LANE_HASH_HEX)}:`;
}

/** The distinct folded words of a text that a tsvector has room for, in text order: those of {@link foldedWords}. */
function indexedWords(text: string): string[] {
  const seen = new Set<string>();
  let bytes = 0;
  for (const token of foldedTokens(text)) {
    const word = token.slice(0, MAX_LEXEME);
    if (!word || seen.has(word)) continue;
    bytes += Buffer.byteLength(word) + 8;
    if (bytes > MAX_VECTOR_BYTES) break;
    seen.add(word);
  }
  return [...seen];
}

/**
 * The `words` (of `message_search`) and `lanes` (of `messages`) columns of a message as tsvector
 * input: its words, and each word again qualified by its chat's lane token and, in a thread, its
 * thread's. Words are cut by the same
 * Unicode rule as the memory and sql.js storages and folded in JS, so the three agree on what a
 * word is; PostgreSQL's `to_tsvector` parser would instead keep `user@example.com` or `foo-bar` as
 * tokens of their own. Words are letters, digits and marks only and tokens hex, `#` and `:`, so quoting
 * them needs no escaping. The lane lexemes stay on `messages`, off the narrow search row that the
 * newest-first walk across all chats reads: they are two to three times the size of `words`.
 */
export function tsvectorText(text: string, chatId: ChatId, threadId: ChatId | null): { words: string; lanes: string } {
  const words = indexedWords(text);
  const lanes = [laneToken("c", chatId), ...(threadId === null ? [] : [laneToken("t", threadId)])];
  const qualified: string[] = [];
  let bytes = 0;
  for (const word of words) {
    bytes += lanes.length * (lanes[0].length + Buffer.byteLength(word) + 8);
    if (bytes > MAX_VECTOR_BYTES) break;
    for (const lane of lanes) qualified.push(`'${lane}${word}'`);
  }
  return { words: words.map((w) => `'${w}'`).join(" "), lanes: qualified.join(" ") };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the whole ASCII range, control characters included
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Every word of a text, cut and folded exactly as `matchText` does (cut first, then each word
 * folded): the words of `folded`, and the lexemes of `words`. Built once for both, so a tsvector
 * has a lexeme starting with a term exactly where `folded` has the term at a word start.
 */
function foldedTokens(text: string): string[] {
  // For ASCII text folding a word is lower-casing it: one pass instead of a normalisation per word.
  return ASCII.test(text)
    ? (text.toLowerCase().match(/[a-z0-9]+/g) ?? [])
    : Array.from(text.matchAll(WORD_PATTERN), (m) => foldText(m[0]));
}

/**
 * The `folded` column of a message: every word of the text ({@link foldedTokens}), each preceded
 * by a space. A word starts with a term exactly where `' ' || term` occurs, so SQL counts a term's
 * occurrences with `replace` (see `rankQuery` in search-rank.ts) and ranks as the other storages
 * do without reading the text. Kept whole (no cut at a size): counts must be exact for the longest
 * message too.
 */
export function foldedWords(text: string): string {
  return foldedTokens(text)
    .map((w) => ` ${w}`)
    .join("");
}

/** The distinct folded words of user input, at most {@link MAX_TERMS}; operators are separators, never syntax. */
export function queryTerms(query: string): string[] {
  return [...new Set((foldText(query).match(WORD_PATTERN) ?? []).map((w) => w.slice(0, MAX_LEXEME)))].slice(
    0,
    MAX_TERMS,
  );
}

/** The lane token of a scope, or "" for all chats; see {@link laneToken}. */
export function scopeLane(q: SearchQuery): string {
  if (q.scope !== "chat") return "";
  return q.thread_id !== undefined ? laneToken("t", q.thread_id) : laneToken("c", q.chat_id ?? "");
}

/**
 * One `EXPLAIN` per term, sent as one multi-statement string: how many rows the planner expects
 * each term to match, to put the rarest first in {@link candidatesQuery}. Terms are letters and
 * digits and lane tokens hex, `#` and `:`, so they are safe inside a quoted literal.
 */
export function estimatesQuery(s: string, q: SearchQuery, terms: string[]): string {
  const lane = scopeLane(q);
  const column = lane ? "lanes" : "words";
  // In a scope, the whole lexeme: for a prefix of a lane lexeme absent from the statistics the
  // planner falls back to a fixed share of the table (20,000 of a million), which would send every
  // search of a chat without the word on the newest-first walk.
  const prefix = lane ? "" : ":*";
  const table = lane ? "messages" : "message_search";
  return terms
    .map(
      (t) => `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${s}.${table} WHERE ${column} @@ '''${lane}${t}''${prefix}'::tsquery`,
    )
    .join(";\n");
}

/** An `EXPLAIN` giving the planner's count of search rows (all owners), to weigh a term's estimate against. */
export function totalQuery(s: string): string {
  return `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${s}.message_search`;
}

/** The planner's row estimate from one result of {@link estimatesQuery} or {@link totalQuery}; Infinity when unreadable. */
export function plannedRows(row: Record<string, unknown> | undefined): number {
  const plan = (row?.["QUERY PLAN"] as Array<{ Plan?: { "Plan Rows"?: unknown } }> | undefined)?.[0]?.Plan?.[
    "Plan Rows"
  ];
  return typeof plan === "number" ? plan : Infinity;
}

/**
 * The statement that fetches the newest `limit` messages in scope matching every term (`all`) or
 * any (`any`), each term a word prefix, as rows `(message_id, ts, folded, words)` for `rankQuery`
 * (search-rank.ts); `$1` is the owner. Across all chats it reads `message_search` only, whose
 * rows are narrow (no text, no JSON record, no lane lexemes), so a newest-first walk reads many
 * rows per page. In a chat or thread scope the terms are the lane-qualified lexemes of that scope,
 * in the `lanes` column of `messages`, and each of the newest `limit` matches is joined to its
 * search row. For `all`, only the first term (give the rarest first) is a condition GIN can
 * serve; the others are tested on its rows. Given them all, GIN would collect every match of a
 * common word before intersecting (about 50 ms for one message in five at a million); a common
 * word is walked instead (`newest`, below). With `texts`, the rows are instead what a hit needs (`message_id, chat_id, thread_key, role, ts,
 * text`), for ranking in JS: cheaper than the ranking statement when few messages match.
 * With `newest` (all chats only), the conditions are tested above an ordered subquery fenced with
 * `OFFSET 0`, which GIN cannot serve: PostgreSQL then walks `messages_recent` newest first and
 * stops at `limit` matches. The caller asks for it when the word is common enough that the walk
 * costs less than collecting and sorting every match, which the planner misjudges for tables of
 * about ten thousand rows (see `walksAllChats` in search-plan.ts).
 *
 * Each statement's plan is fixed by its shape, whatever the words, so that a prepared statement
 * can keep one generic plan (prepared.ts). Without `newest`, the GIN conditions sit in a subquery
 * fenced with `OFFSET 0` and ordered above it, so no plan walks an index newest first: one that
 * did, kept for a common word, would read the owner's whole history for a rare one. With
 * `newest`, the walk's `LIMIT` is a scalar subquery, a number the planner does not look into: it
 * then prices every walk as reading a tenth of the owner's rows, with or without the words. With
 * the number in sight, it prices a walk for a common word by that word's estimate, and a plan
 * made without the words (`@@` of an unseen word is 0.5 % of rows) as reading every row, so it
 * would never keep one.
 */
export function candidatesQuery(
  s: string,
  owner: Owner,
  q: SearchQuery,
  terms: string[],
  mode: "all" | "any",
  limit: number,
  { texts = false, newest = false }: { texts?: boolean; newest?: boolean } = {},
): { text: string; values: unknown[] } {
  const values: unknown[] = [owner];
  let scope = "";
  if (q.scope === "chat") {
    values.push(q.thread_id ?? q.chat_id ?? "");
    scope = q.thread_id !== undefined ? " AND thread_key = $2" : " AND chat_id = $2";
  }
  const lane = scopeLane(q);
  const prefixes = terms.map((t) => `'${lane}${t}':*`);
  const column = lane ? "lanes" : "words";
  const tsqueries = mode === "all" ? prefixes : [prefixes.join(" | ")];
  const params = tsqueries.map((tsquery) => {
    values.push(tsquery);
    return `$${values.length}::tsquery`;
  });
  if (newest && !lane && !texts) {
    // The subquery's order is kept: a filter and a LIMIT above a subquery scan do not reorder rows.
    const walk = `SELECT message_id, ts, folded, words FROM ${s}.message_search WHERE owner = $1 ORDER BY ts DESC, message_id DESC OFFSET 0`;
    return {
      text: `SELECT message_id, ts, folded, words FROM (${walk}) w WHERE ${params.map((p) => `words @@ ${p}`).join(" AND ")} LIMIT (SELECT ${limit})`,
      values,
    };
  }
  // IS TRUE makes a condition a filter: the planner cannot match it to the index.
  const conditions = params
    .map((p, i) => (i === 0 ? ` AND ${column} @@ ${p}` : ` AND (${column} @@ ${p}) IS TRUE`))
    .join("");
  /** The newest `limit` rows of `table` in scope that match, GIN's work fenced off from the order (see above). */
  const newestMatches = (columns: string, table: string) =>
    `SELECT ${columns} FROM (SELECT ${columns} FROM ${s}.${table} WHERE owner = $1${scope}${conditions} OFFSET 0) g ORDER BY ts DESC, message_id DESC LIMIT ${limit}`;
  if (texts) {
    const hit = "message_id, chat_id, thread_key, role, ts, text";
    return {
      text: lane
        ? newestMatches(hit, "messages")
        : `SELECT m.${hit.replaceAll(", ", ", m.")} FROM (${newestMatches("message_id, ts", "message_search")}) c JOIN ${s}.messages m ON m.owner = $1 AND m.message_id = c.message_id`,
      values,
    };
  }
  return {
    text: lane
      ? `SELECT c.message_id, c.ts, x.folded, x.words FROM (${newestMatches("message_id, ts", "messages")}) c JOIN ${s}.message_search x ON x.owner = $1 AND x.message_id = c.message_id`
      : newestMatches("message_id, ts, folded, words", "message_search"),
    values,
  };
}

/**
 * The statement that walks the newest `window` messages of a chat or thread scope newest first
 * (through `messages_chat_recent` or `messages_thread_recent`) and returns the ids of those
 * matching the terms as {@link candidatesQuery} would (`hit`), stopping at `limit` of them. It
 * also returns the window's last row (`n` = `window`) when the walk gets that far, matching or
 * not: without it, fewer than `limit` matches could not tell a scope that ended from a window that did.
 */
export function walkQuery(
  s: string,
  owner: Owner,
  q: SearchQuery,
  terms: string[],
  mode: "all" | "any",
  limit: number,
  window: number,
): { text: string; values: unknown[] } {
  const lane = scopeLane(q);
  const scope = q.thread_id !== undefined ? "thread_key = $2 AND thread_key <> ''" : "chat_id = $2";
  const tsquery = terms.map((t) => `'${lane}${t}':*`).join(mode === "all" ? " & " : " | ");
  return {
    text: `SELECT message_id, hit, n FROM (
      SELECT message_id, ts, lanes @@ $3::tsquery AS hit, row_number() OVER (ORDER BY ts DESC, message_id DESC) AS n
      FROM ${s}.messages WHERE owner = $1 AND ${scope} ORDER BY ts DESC, message_id DESC LIMIT ${window}
    ) w WHERE hit OR n = ${window} ORDER BY ts DESC, message_id DESC LIMIT ${limit + 1}`,
    values: [owner, q.thread_id ?? q.chat_id ?? "", tsquery],
  };
}

/** A candidate row: what ranking and the hit need. */
export interface Candidate {
  message: Pick<StoredMessage, "message_id" | "chat_id" | "thread_id" | "role" | "ts" | "text">;
}

export interface Ranked extends TextMatch {
  message: Candidate["message"];
  /** The message's, copied up so that sorting compares without building objects. */
  ts: number;
  message_id: string;
}

const ASCII_WORD_CHAR = /[a-z0-9]/;

/**
 * `matchText` for text that is all ASCII, where folding a word is lower-casing it: one
 * `toLowerCase` of the whole text and a search for each term at word starts, instead of a Unicode
 * normalisation per word (about 10 ms for the 1,000 candidates of a common word).
 */
function matchAscii(text: string, terms: string[]): TextMatch | undefined {
  const lower = text.toLowerCase();
  let matched = 0;
  let hits = 0;
  let first = -1;
  for (const term of terms) {
    let found = false;
    for (let at = lower.indexOf(term); at >= 0; at = lower.indexOf(term, at + 1)) {
      if (at > 0 && ASCII_WORD_CHAR.test(lower[at - 1])) continue;
      found = true;
      hits++;
      if (first < 0 || at < first) first = at;
    }
    if (found) matched++;
  }
  return matched ? { terms: matched, hits, first } : undefined;
}

/**
 * Query words matched, occurrences and the first one's offset, counted on the text itself: for
 * the best rows `rankQuery` returns, the same counts it ranked by, plus where the snippet goes.
 */
export function rank(message: Candidate["message"], terms: string[]): Ranked | undefined {
  const match = ASCII.test(message.text) ? matchAscii(message.text, terms) : matchText(message.text, terms);
  return match && { message, ...match, ts: message.ts, message_id: message.message_id };
}

export const byRank: (a: Ranked, b: Ranked) => number = compareMatches;

/** A ranked candidate as a search hit. */
export function toHit(r: Ranked): SearchHit {
  const m = r.message;
  return {
    message_id: m.message_id,
    chat_id: m.chat_id,
    thread_id: m.thread_id,
    role: m.role,
    snippet: snippetAround(m.text, r.first),
    ts: m.ts,
  };
}

export type { SearchQuery };
