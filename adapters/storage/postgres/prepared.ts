/**
 * Search statements run as named prepared statements, so that PostgreSQL can keep a generic plan
 * of each on every connection instead of parsing and planning it on every search.
 * @module
 */
import { createHash } from "node:crypto";

/**
 * Bytes of statement text a process prepares, all texts together. A prepared statement holds
 * about 100 bytes of server memory per byte of its text on each connection of the pool (its parse
 * tree and kept plan, measured: 100 kB for a one-word search, 200 kB for two words, 800 kB for
 * sixteen), so this bounds that memory to about 6.5 MB per connection, whatever searches users
 * send. A text depends on the scope, path, limit and number of words, not on the words, so
 * everyday searches need a few dozen kilobytes; texts past the budget run unnamed, as every
 * statement did before.
 */
export const PREPARED_TEXT_BYTES = 64 * 1024;

/**
 * The name to prepare a statement's text under, or undefined to run it unnamed: when preparing is
 * off (a pooler that cannot carry prepared statements) or the text does not fit in what is left
 * of {@link PREPARED_TEXT_BYTES}. A name is a hash of the text, so every connection and process
 * agrees on it, and the driver never sees one name with two texts.
 */
export function preparedNames(enabled: boolean, budget = PREPARED_TEXT_BYTES): (text: string) => string | undefined {
  const named = new Set<string>();
  let left = budget;
  return (text) => {
    if (!enabled) return undefined;
    const name = `cg_${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
    if (named.has(name)) return name;
    if (text.length > left) return undefined;
    left -= text.length;
    named.add(name);
    return name;
  };
}
