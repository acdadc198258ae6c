// A search snippet with the words of the query marked. The gateway matches words case- and
// accent-blind and by prefix (docs/PROTOCOL.md §5), so the marking folds both the same way.
import { h } from "../dom.js";

const fold = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/** The snippet as text nodes and `<mark>`s around every word that starts with a query word. */
export function markedSnippet(snippet: string, query: string): Array<string | HTMLElement> {
  const words = fold(query).match(/[\p{L}\p{N}]+/gu) ?? [];
  const parts: Array<string | HTMLElement> = [];
  let last = 0;
  for (const match of snippet.matchAll(/[\p{L}\p{N}][\p{L}\p{M}\p{N}]*/gu)) {
    const word = fold(match[0]);
    if (!words.some((w) => word.startsWith(w))) continue;
    parts.push(snippet.slice(last, match.index), h("mark", null, match[0]));
    last = match.index + match[0].length;
  }
  parts.push(snippet.slice(last));
  return parts.filter((p) => p !== "");
}
