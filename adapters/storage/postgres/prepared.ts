/**
 * Search statements run as named prepared statements, so that PostgreSQL can keep a generic plan
 * of each on every connection instead of parsing and planning it on every search.
 * @module
 */
import { createHash } from "node:crypto";

/**
 * Distinct statement texts a process prepares. Each costs every connection of the pool about
 * 100 to 200 kB of server memory once prepared (its parse tree and cached plan); a search's text
 * depends on its scope, path and number of words, not on the words themselves, so everyday
 * searches need a few dozen. Texts past the cap run unnamed, as every statement did before.
 */
export const PREPARED_MAX = 64;

/**
 * The name to prepare a statement's text under, or undefined to run it unnamed: when preparing is
 * off (a pooler that cannot carry prepared statements) or {@link PREPARED_MAX} texts already have
 * names. A name is a hash of the text, so every connection and process agrees on it, and the
 * driver never sees one name with two texts.
 */
export function preparedNames(enabled: boolean, max = PREPARED_MAX): (text: string) => string | undefined {
  const named = new Set<string>();
  return (text) => {
    if (!enabled) return undefined;
    const name = `cg_${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
    if (named.has(name)) return name;
    if (named.size >= max) return undefined;
    named.add(name);
    return name;
  };
}
