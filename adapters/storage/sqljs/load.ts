import { readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Database, SqlJsStatic } from "sql.js";
import { applyOp, type JournalOp } from "./apply.js";
import { makePrivateFiles } from "./file-modes.js";
import { makeHeadroom } from "./headroom.js";
import { journalGen, journalName, readJournal, truncateJournal } from "./journal.js";
import { migrate } from "./schema.js";
import { readSnapshot, snapshotGen, snapshotName } from "./snapshot.js";
import { Sql, tuneInMemory } from "./sql.js";

/** A data folder loaded into memory: the database as of its last intact journal record. */
export interface LoadedFolder {
  db: Database;
  /** Its statement cache, warm from the replay. */
  sql: Sql;
  /** Journal generation new records go to: a fresh one, never appended after a torn tail. */
  gen: number;
  /** Generations of the snapshots on disk, oldest first. */
  snapshots: number[];
  snapshotBytes: number;
  /** Bytes of journal replayed on top of the snapshot. */
  journalBytes: number;
  /** The schema was migrated: snapshot right away so the next start need not migrate again. */
  migrated: boolean;
}

/**
 * Loads the newest intact snapshot of `dir` and replays the journals written since. Used at open
 * and again after a failed journal write, to drop whatever the disk never got. Damaged snapshots
 * are set aside, torn journal tails cut off, with a warning each.
 *
 * With `before`, only the generations before it are read and nothing on disk is changed: that is
 * the snapshot process's view of a folder whose owner is still appending to generation `before`
 * (see `snapshot-process.ts`). The owner fixed the folder up when it loaded it, and every record
 * of those generations was on disk before the snapshot process started.
 */
export async function loadFolder(
  dir: string,
  SQL: SqlJsStatic,
  warn: (message: string) => void,
  before = Infinity,
): Promise<LoadedFolder> {
  const owner = before === Infinity;
  const names = await readdir(dir);
  if (owner) {
    for (const n of names) if (n.endsWith(".tmp")) await rm(join(dir, n), { force: true });
    await makePrivateFiles(
      dir,
      names.filter((n) => snapshotGen(n) !== undefined || journalGen(n) !== undefined),
    );
  }
  const generations = (of: (name: string) => number | undefined) =>
    names
      .map(of)
      .filter((g): g is number => g !== undefined && g < before)
      .sort((a, b) => a - b);
  const journals = generations(journalGen);
  const base = await newestSnapshot(dir, SQL, generations(snapshotGen), warn, owner);
  if (!base.db && journals.length && journals[0] > 1) {
    throw new Error(
      `sql.js storage: ${dir} has journals from generation ${journals[0]} but no snapshot; refusing to start from an incomplete history.`,
    );
  }
  const db = base.db ?? new SQL.Database();
  tuneInMemory(db);
  const sql = new Sql(db);
  try {
    const migrated = migrate(sql) > 0 && base.db !== undefined;
    let journalBytes = 0;
    for (const gen of journals) {
      if (gen >= base.gen) journalBytes += await replayJournal(sql, join(dir, journalName(gen)), warn, owner);
    }
    const gen = Math.max(base.gen - 1, journals.at(-1) ?? 0) + 1;
    // The copy sql.js makes when the file first grows, now rather than at the first write.
    if (owner) makeHeadroom(db);
    return { db, sql, gen, snapshots: base.kept, snapshotBytes: base.bytes, journalBytes, migrated };
  } catch (error) {
    sql.free();
    db.close();
    throw error;
  }
}

/** The newest intact snapshot among `snapshots` (generations, oldest first), loaded. */
async function newestSnapshot(
  dir: string,
  SQL: SqlJsStatic,
  snapshots: number[],
  warn: (message: string) => void,
  owner: boolean,
) {
  const damaged: string[] = [];
  for (let i = snapshots.length - 1; i >= 0; i--) {
    const path = join(dir, snapshotName(snapshots[i]));
    let db: Database | undefined;
    try {
      const bytes = await readSnapshot(path);
      db = new SQL.Database(bytes);
      db.exec("SELECT count(*) FROM sqlite_master");
      // Kept for inspection, but out of the way of the generations that follow.
      if (owner) for (const p of damaged) await rename(p, `${p}.damaged`);
      return { db, gen: snapshots[i], bytes: bytes.length, kept: snapshots.slice(0, i + 1) };
    } catch (error) {
      db?.close();
      damaged.push(path);
      warn(`sql.js storage: skipping snapshot ${path}: ${(error as Error).message}`);
    }
  }
  if (snapshots.length) {
    throw new Error(
      `sql.js storage: no intact snapshot in ${dir}; refusing to start from an incomplete history. Restore the folder from a backup.`,
    );
  }
  return { db: undefined, gen: 1, bytes: 0, kept: [] as number[] };
}

/** Replays a journal's intact records; resolves with their size. The owner cuts off a torn tail. */
async function replayJournal(sql: Sql, path: string, warn: (message: string) => void, owner: boolean): Promise<number> {
  const contents = await readJournal(path);
  replay(sql, path, contents.payloads, warn);
  if (contents.damage) {
    warn(
      `sql.js storage: ${path}: ${contents.damage}; dropped the last ${contents.totalBytes - contents.validBytes} bytes (writes that were never acknowledged), kept ${contents.payloads.length} records before it`,
    );
    if (owner) await truncateJournal(path, contents.validBytes);
  }
  return contents.validBytes;
}

function replay(sql: Sql, path: string, payloads: string[], warn: (message: string) => void): void {
  sql.transaction(() => {
    for (let i = 0; i < payloads.length; i++) {
      try {
        sql.savepoint(() => applyOp(sql, JSON.parse(payloads[i]) as JournalOp));
      } catch (error) {
        warn(`sql.js storage: ${path}: record ${i} could not be applied and was skipped: ${(error as Error).message}`);
      }
    }
  });
}
