import type { Database } from "sql.js";
import { pragmaNumber } from "./sql.js";

/**
 * Below this share of free pages, opening the database grows its file (see {@link makeHeadroom}).
 * Each open that grows it leaves a page or two more on the free list, so this bounds the file's
 * free space however often the store is restarted.
 */
const FREE_SHARE = 1 / 64;

/** A table that exists only inside {@link makeHeadroom}. */
const SCRATCH = "cg_headroom";

/**
 * sql.js keeps the database file in one array sized exactly to the bytes it was opened from, and
 * the first write that extends the file copies all of it into an array 12.5 % larger, with every
 * call waiting: 0.3 s at a million messages on a quiet machine, 2 s on a busy one. Extending the
 * file by a page at open makes that copy happen before the database answers; the next one comes
 * after 12.5 % of growth. The file can only be extended once its free pages are used, so this
 * writes a blob one page larger than the free list and drops it: the pages become free pages that
 * later writes reuse. Not journaled: it changes no row, only how the file is laid out.
 *
 * A database that already has {@link FREE_SHARE} of its pages free is left alone: those pages take
 * the first growth, and growing it on every start would add free pages without end.
 */
export function makeHeadroom(db: Database): void {
  const pages = pragmaNumber(db, "page_count");
  const free = pragmaNumber(db, "freelist_count");
  if (pages === 0 || free >= pages * FREE_SHARE) return;
  const bytes = (free + 1) * pragmaNumber(db, "page_size");
  db.run(`CREATE TABLE ${SCRATCH}(b BLOB)`);
  try {
    db.run(`INSERT INTO ${SCRATCH} VALUES (zeroblob(?))`, [bytes]);
  } finally {
    db.run(`DROP TABLE ${SCRATCH}`);
  }
}
