// A search snippet with the words of the query marked. The gateway matches words case- and
// accent-blind and by prefix (docs/PROTOCOL.md §5), so the marking folds both the same way.
import { h } from "../dom.js";

const fold = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/**
 * A snippet of stored Markdown as the plain text a reader sees: no fences, backticks, emphasis
 * marks, heading or quote marks, list bullets or link targets.
 */
export function plainSnippet(markdown: string): string {
  return markdown
    .replace(/```[\w-]*/g, " ")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`+/g, "")
    .replace(/(\*\*|__|~~)(?=\S)|(?<=\S)(\*\*|__|~~)/g, "")
    .replace(/(^|[\s(])[*_](?=\S)|(?<=\S)[*_](?=[\s).,!?:;]|$)/g, "$1")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** The snippet as plain text with `<mark>`s around every word that starts with a query word. */
export function markedSnippet(markdown: string, query: string): Array<string | HTMLElement> {
  const snippet = plainSnippet(markdown);
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
