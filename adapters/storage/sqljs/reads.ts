import { actionTokenQueries } from "./action-tokens.js";
import { hookQueries } from "./hooks.js";
import { queries } from "./queries.js";
import { readMarkQueries } from "./read-marks.js";
import { scheduleQueries } from "./schedules.js";
import { searchHits, searchRanked } from "./search.js";
import type { Sql } from "./sql.js";

/**
 * Every read the storage offers, by name: the one list both the in-process storage and the
 * database process answer from, so a read crosses the process boundary as a name and arguments.
 * A search is two kinds of read (ranking, then snippets a few hits at a time), so that no single
 * read holds the database process up for long (see fair-reads.ts).
 */
const READS = {
  ...queries,
  ...hookQueries,
  ...readMarkQueries,
  ...scheduleQueries,
  ...actionTokenQueries,
  searchRanked,
  searchHits,
  // The readiness probe: a round trip to the database process, past every cache of this one.
  ping: (sql: Sql): boolean => sql.get("SELECT 1") !== undefined,
} as const;

/** The name of a read of {@link READS}. */
export type ReadName = keyof typeof READS;

/** Runs the read `name` with its arguments; an unknown name is a programming error. */
export function readQuery(sql: Sql, name: ReadName, args: unknown[]): unknown {
  const fn = READS[name] as ((sql: Sql, ...rest: unknown[]) => unknown) | undefined;
  if (typeof fn !== "function" || !Object.hasOwn(READS, name))
    throw new Error(`sql.js storage: unknown read ${String(name)}`);
  return fn(sql, ...args);
}
