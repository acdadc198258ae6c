import { readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Database, SqlJsStatic } from "sql.js";
import { applyOp, type JournalOp } from "./apply.js";
import { makePrivateFiles } from "./file-modes.js";
import { journalGen, journalName, readJournal, truncateJournal } from "./journal.js";
import { migrate } from "./schema.js";
import { readSnapshot, snapshotGen, snapshotName } from "./snapshot.js";
import { Sql } from "./sql.js";

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
 */
export async function loadFolder(dir: string, SQL: SqlJsStatic, warn: (message: string) => void): Promise<LoadedFolder> {
  const names = await readdir(dir);
  for (const n of names) if (n.endsWith(".tmp")) await rm(join(dir, n), { force: true });
  await makePrivateFiles(dir, names.filter((n) => snapshotGen(n) !== undefined || journalGen(n) !== undefined));
  const snapshots = names.map(snapshotGen).filter((g): g is number => g !== undefined).sort((a, b) => a - b);
  const journals = names.map(journalGen).filter((g): g is number => g !== undefined).sort((a, b) => a - b);

  let base = 1;
  let loaded: Database | undefined;
  let kept: number[] = [];
  let snapshotBytes = 0;
  const damaged: string[] = [];
  for (let i = snapshots.length - 1; i >= 0 && !loaded; i--) {
    const path = join(dir, snapshotName(snapshots[i]));
    try {
      const bytes = await readSnapshot(path);
      loaded = new SQL.Database(bytes);
      loaded.exec("SELECT count(*) FROM sqlite_master");
      base = snapshots[i];
      snapshotBytes = bytes.length;
      kept = snapshots.slice(0, i + 1);
    } catch (error) {
      loaded?.close();
      loaded = undefined;
      damaged.push(path);
      warn(`sql.js storage: skipping snapshot ${path}: ${(error as Error).message}`);
    }
  }
  // Kept for inspection, but out of the way of the generations that follow.
  if (loaded) for (const path of damaged) await rename(path, `${path}.damaged`);
  if (!loaded && snapshots.length) {
    throw new Error(`sql.js storage: no intact snapshot in ${dir}; refusing to start from an incomplete history. Restore the folder from a backup.`);
  }
  if (!loaded && journals.length && journals[0] > 1) {
    throw new Error(`sql.js storage: ${dir} has journals from generation ${journals[0]} but no snapshot; refusing to start from an incomplete history.`);
  }
  const db = loaded ?? new SQL.Database();
  const sql = new Sql(db);
  try {
    const migrated = migrate(sql) > 0 && loaded !== undefined;
    let journalBytes = 0;
    for (const gen of journals) {
      if (gen < base) continue;
      const path = join(dir, journalName(gen));
      const contents = await readJournal(path);
      replay(sql, path, contents.payloads, warn);
      journalBytes += contents.validBytes;
      if (contents.damage) {
        warn(
          `sql.js storage: ${path}: ${contents.damage}; dropped the last ${contents.totalBytes - contents.validBytes} bytes (writes that were never acknowledged), kept ${contents.payloads.length} records before it`,
        );
        await truncateJournal(path, contents.validBytes);
      }
    }
    const gen = Math.max(base - 1, journals.at(-1) ?? 0) + 1;
    return { db, sql, gen, snapshots: kept, snapshotBytes, journalBytes, migrated };
  } catch (error) {
    sql.free();
    db.close();
    throw error;
  }
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
