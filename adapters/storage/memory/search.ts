import type { SearchHit, SearchQuery, StoredMessage } from "chat-gateway";
import { compareMatches, matchText, searchTerms, snippetAround, type TextMatch } from "chat-gateway";

/**
 * Word and prefix search over messages: every query word matches words that start with it.
 * Ranked by how many query words matched, then by occurrences, then newest first.
 */
export function searchMessages(messages: Iterable<StoredMessage>, query: SearchQuery): SearchHit[] {
  const terms = searchTerms(query.query);
  if (!terms.length || query.limit < 1) return [];
  const found: Array<TextMatch & { message: StoredMessage; ts: number; message_id: string }> = [];
  for (const m of messages) {
    if (query.scope === "chat") {
      if (query.thread_id !== undefined ? m.thread_id !== query.thread_id : m.chat_id !== query.chat_id) continue;
    }
    const match = matchText(m.text, terms);
    if (match) found.push({ ...match, message: m, ts: m.ts, message_id: m.message_id });
  }
  found.sort(compareMatches);
  return found.slice(0, query.limit).map(({ message: m, first }) => ({
    message_id: m.message_id,
    chat_id: m.chat_id,
    thread_id: m.thread_id,
    role: m.role,
    snippet: snippetAround(m.text, first),
    ts: m.ts,
  }));
}
