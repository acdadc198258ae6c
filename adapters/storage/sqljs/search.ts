import type { Owner, SearchHit, SearchQuery } from "chat-gateway";
import { LIMITS } from "chat-gateway";
import type { Sql } from "./sql.js";

const WORD = /[\p{L}\p{N}]+/gu;
/** More query words than this add cost and no meaning. */
const MAX_TERMS = 16;
/** Tokens `snippet()` returns; about 200 characters of ordinary prose. */
const SNIPPET_TOKENS = 28;

function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}+/gu, "").toLowerCase();
}

/**
 * The FTS4 query for user text: each word quoted as a prefix phrase and joined with OR, so no
 * input is ever parsed as FTS syntax, and ranking (not the query) decides how many words must match.
 */
export function matchExpression(query: string): string | undefined {
  const terms = [...new Set(fold(query).match(WORD) ?? [])].slice(0, MAX_TERMS);
  return terms.length ? terms.map((t) => `"${t}*"`).join(" OR ") : undefined;
}

/** Words matched and total occurrences, from `matchinfo(…, 'pcx')` of a one-column table. */
function rank(info: Uint8Array): { terms: number; hits: number } {
  // matchinfo is an array of native-endian uint32; wasm is little-endian.
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  const u32 = (i: number) => view.getUint32(i * 4, true);
  const phrases = u32(0);
  const columns = u32(1);
  let terms = 0;
  let hits = 0;
  for (let p = 0; p < phrases; p++) {
    const inRow = u32(2 + 3 * p * columns);
    if (inRow > 0) terms++;
    hits += inRow;
  }
  return { terms, hits };
}

/** A snippet as one line, cut to the protocol's limit around the hit when `snippet()` ran long. */
function clampSnippet(snippet: string, text: string, query: string): string {
  const max = LIMITS.snippetMax;
  const flat = snippet.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const terms = [...new Set(fold(query).match(WORD) ?? [])];
  const whole = text.replace(/\s+/g, " ");
  let at = 0;
  for (const m of whole.matchAll(WORD)) {
    const w = fold(m[0]);
    if (terms.some((t) => w.startsWith(t))) {
      at = m.index;
      break;
    }
  }
  let start = Math.max(0, at - 60);
  start = Math.min(start, Math.max(0, whole.length - (max - 1)));
  const head = start > 0 ? "…" : "";
  const room = max - head.length;
  const tail = start + room < whole.length ? "…" : "";
  return head + whole.slice(start, start + room - tail.length) + tail;
}

/**
 * Full-text search with FTS4: rank every match of the owner in scope by matched words, then
 * occurrences, then newest; then build snippets only for the hits returned.
 */
export function search(sql: Sql, owner: Owner, q: SearchQuery): SearchHit[] {
  const match = matchExpression(q.query);
  if (!match || q.limit < 1) return [];
  let scope = "";
  const params: Array<string | number> = [match, owner];
  if (q.scope === "chat") {
    if (q.thread_id !== undefined) {
      scope = " AND m.thread_key = ?";
      params.push(q.thread_id);
    } else {
      scope = " AND m.chat_id = ?";
      params.push(q.chat_id ?? "");
    }
  }
  // CROSS JOIN pins the full-text index as the outer loop; left to itself the planner may scan the
  // owner's messages and evaluate MATCH once per row.
  const rows = sql.all(
    `SELECT m.id, m.ts, m.message_id, matchinfo(messages_fts, 'pcx') FROM messages_fts CROSS JOIN messages m ON m.id = messages_fts.docid
     WHERE messages_fts MATCH ? AND m.owner = ?${scope}`,
    params,
  );
  const ranked = rows.map(([id, ts, messageId, info]) => ({ id: id as number, ts: ts as number, messageId: messageId as string, ...rank(info as Uint8Array) }));
  ranked.sort((a, b) => b.terms - a.terms || b.hits - a.hits || b.ts - a.ts || (a.messageId < b.messageId ? 1 : a.messageId > b.messageId ? -1 : 0));
  const top = ranked.slice(0, q.limit);
  if (!top.length) return [];
  const detail = new Map(
    sql
      .all(
        `SELECT m.id, m.message_id, m.chat_id, m.thread_key, m.role, m.ts, m.text, snippet(messages_fts, '', '', '…', -1, ${SNIPPET_TOKENS})
         FROM messages_fts CROSS JOIN messages m ON m.id = messages_fts.docid
         WHERE messages_fts MATCH ? AND messages_fts.docid IN (${top.map(() => "?").join(",")})`,
        [match, ...top.map((t) => t.id)],
      )
      .map((r) => [r[0] as number, r]),
  );
  return top.map(({ id }) => {
    const [, messageId, chatId, threadKey, role, ts, text, snippet] = detail.get(id)!;
    return {
      message_id: messageId as string,
      chat_id: chatId as string,
      thread_id: (threadKey as string) || null,
      role: role as SearchHit["role"],
      snippet: clampSnippet(snippet as string, text as string, q.query),
      ts: ts as number,
    };
  });
}
