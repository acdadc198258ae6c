import type { Owner, SearchHit, SearchQuery } from "chat-gateway";
import { LIMITS } from "chat-gateway";
import type { Sql } from "./sql.js";

const WORD = /[\p{L}\p{N}]+/gu;
/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/**
 * Matches ranked per query step; see {@link search}. A chat scope walks the owner's matches until
 * it has this many in the chat, so it gets a smaller window.
 */
const CANDIDATES = { all: 1000, chat: 250 };

function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}+/gu, "").toLowerCase();
}

/** The distinct folded words of user input, at most {@link MAX_TERMS}. */
function queryTerms(query: string): string[] {
  return [...new Set(fold(query).match(WORD) ?? [])].slice(0, MAX_TERMS);
}

/**
 * FTS4 queries for user text: each word quoted as a prefix phrase, so no input is ever parsed as
 * FTS syntax. `all` needs every word (implicit AND), `any` one of them (OR).
 */
export function matchExpressions(query: string): { all: string; any: string } | undefined {
  const terms = queryTerms(query);
  if (!terms.length) return undefined;
  const phrases = terms.map((t) => `"${t}*"`);
  return { all: phrases.join(" "), any: phrases.join(" OR ") };
}

/** Words matched and total occurrences, from `matchinfo(…, 'pcy')` of a one-column table. */
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
 * At most {@link LIMITS.snippetMax} characters of `text` as one line, starting a little before the
 * first word that matches the query, with an ellipsis where text was cut. Built here rather than
 * with FTS4's `snippet()`, which re-evaluates the whole match for every row it is asked about
 * (about 2 ms per hit for a common word at 100,000 messages).
 */
function snippetOf(text: string, terms: string[]): string {
  const max = LIMITS.snippetMax;
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  let at = 0;
  for (const m of flat.matchAll(WORD)) {
    const w = fold(m[0]);
    if (terms.some((t) => w.startsWith(t))) {
      at = m.index;
      break;
    }
  }
  let start = Math.max(0, at - 60);
  if (start > 0) {
    const space = flat.indexOf(" ", start - 1);
    if (space >= 0 && space < at) start = space + 1;
  }
  start = Math.min(start, Math.max(0, flat.length - (max - 1)));
  const head = start > 0 ? "…" : "";
  const room = max - head.length;
  const tail = start + room < flat.length ? "…" : "";
  return head + flat.slice(start, start + room - tail.length) + tail;
}

interface Ranked {
  id: number;
  ts: number;
  messageId: string;
  terms: number;
  hits: number;
}

const byRank = (a: Ranked, b: Ranked) =>
  b.terms - a.terms || b.hits - a.hits || b.ts - a.ts || (a.messageId < b.messageId ? 1 : a.messageId > b.messageId ? -1 : 0);

/**
 * Full-text search with FTS4, best match first: most query words matched, then most occurrences,
 * then newest. Messages matching every word are looked for first, then those matching any. Each
 * step ranks at most the newest {@link CANDIDATES} matches in scope (1,000; 250 in a chat), so a
 * common word costs about the same at any history size; below that many matches the ranking is
 * exact. Snippets are built only for the hits returned.
 */
export function search(sql: Sql, owner: Owner, q: SearchQuery): SearchHit[] {
  const match = matchExpressions(q.query);
  if (!match || q.limit < 1) return [];
  let scope = "";
  const scopeParams: string[] = [owner];
  if (q.scope === "chat") {
    if (q.thread_id !== undefined) {
      scope = " AND m.thread_key = ?";
      scopeParams.push(q.thread_id);
    } else {
      scope = " AND m.chat_id = ?";
      scopeParams.push(q.chat_id ?? "");
    }
  }
  // CROSS JOIN pins the full-text index as the outer loop, walked newest docid first; left to
  // itself the planner may scan the owner's messages and evaluate MATCH once per row.
  const candidates = (expr: string): Ranked[] =>
    sql
      .all(
        `SELECT m.id, m.ts, m.message_id, matchinfo(messages_fts, 'pcy') FROM messages_fts CROSS JOIN messages m ON m.id = messages_fts.docid
         WHERE messages_fts MATCH ? AND m.owner = ?${scope} ORDER BY messages_fts.docid DESC LIMIT ${CANDIDATES[q.scope === "chat" ? "chat" : "all"]}`,
        [expr, ...scopeParams],
      )
      .map(([id, ts, messageId, info]) => ({ id: id as number, ts: ts as number, messageId: messageId as string, ...rank(info as Uint8Array) }));

  let top = candidates(match.all).sort(byRank).slice(0, q.limit);
  if (top.length < q.limit && match.all !== match.any) {
    const seen = new Set(top.map((r) => r.id));
    top = top.concat(
      candidates(match.any)
        .filter((r) => !seen.has(r.id))
        .sort(byRank)
        .slice(0, q.limit - top.length),
    );
  }
  const terms = queryTerms(q.query);
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
