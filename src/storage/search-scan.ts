/**
 * Search by scanning messages: the ranking every storage's search must give, applied to messages
 * the caller hands over. The memory storage searches this way, and so does the core's fallback for
 * a storage without the `search` capability (docs/PROTOCOL.md §5).
 * @module
 */
import type { SearchHit, StoredMessage } from "../contracts/records.js";
import type { SearchQuery } from "../contracts/storage-change.js";
import { LIMITS } from "../protocol/limits.js";
import { compareMatches, matchText, searchTerms, snippetAround, type TextMatch } from "../protocol/search-text.js";

type Found = TextMatch & { message: StoredMessage; ts: number; message_id: string };

/** Collects the messages that match, then ranks them; feed it once per batch, then call `hits()`. */
export interface SearchScan {
  add(messages: Iterable<StoredMessage>): void;
  hits(): SearchHit[];
}

/** Newest first: `ts`, then `message_id`, both descending. */
const byAge = (a: Found, b: Found) =>
  b.ts - a.ts || (a.message_id < b.message_id ? 1 : a.message_id > b.message_id ? -1 : 0);

/**
 * The best `limit` matches as docs/PROTOCOL.md §5 ranks them: those with every word first, then
 * those with any; each step ranks the newest {@link LIMITS.searchCandidates} of its matches, as an
 * indexed storage does, so every storage finds the same.
 */
function ranked(found: Found[], words: number, limit: number): Found[] {
  const newest = (matches: Found[]) => matches.sort(byAge).slice(0, LIMITS.searchCandidates);
  const every = newest(found.filter((f) => f.terms === words))
    .sort(compareMatches)
    .slice(0, limit);
  if (every.length >= limit || words < 2) return every;
  const seen = new Set(every.map((f) => f.message_id));
  const any = newest(found).filter((f) => !seen.has(f.message_id));
  return every.concat(any.sort(compareMatches).slice(0, limit - every.length));
}

/**
 * A scan for `query` over messages fed in batches: word prefixes, case- and diacritic-insensitive,
 * ranked by more query words matched, then more occurrences, then newest, each step (every word,
 * then any word) over the newest `LIMITS.searchCandidates` of its matches (docs/PROTOCOL.md §5).
 * The chat scope is applied to what is fed, so a caller may feed a whole owner.
 */
export function searchScan(query: SearchQuery): SearchScan {
  const terms = searchTerms(query.query);
  const found: Found[] = [];
  return {
    add(messages) {
      if (!terms.length || query.limit < 1) return;
      for (const m of messages) {
        if (!inScope(m, query)) continue;
        const match = matchText(m.text, terms);
        if (match) found.push({ ...match, message: m, ts: m.ts, message_id: m.message_id });
      }
    },
    hits() {
      return ranked(found, terms.length, Math.max(0, query.limit)).map(({ message: m, first }) => ({
        message_id: m.message_id,
        chat_id: m.chat_id,
        thread_id: m.thread_id,
        role: m.role,
        snippet: snippetAround(m.text, first),
        ts: m.ts,
      }));
    },
  };
}

/**
 * Word and prefix search over `messages`, ranked as {@link searchScan} ranks. For a storage that
 * holds its messages in memory; a database should search with an index instead.
 */
export function searchMessages(messages: Iterable<StoredMessage>, query: SearchQuery): SearchHit[] {
  const scan = searchScan(query);
  scan.add(messages);
  return scan.hits();
}

function inScope(m: StoredMessage, query: SearchQuery): boolean {
  if (query.scope !== "chat") return true;
  return query.thread_id !== undefined ? m.thread_id === query.thread_id : m.chat_id === query.chat_id;
}
