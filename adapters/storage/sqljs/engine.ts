import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Database, SqlJsStatic } from "sql.js";
import { applyOp, type JournalOp, type OpResult } from "./apply.js";
import { RETRY_AFTER_FAILURE_MS, writeFailed } from "./disk-errors.js";
import { JournalWriter, encodeRecord, journalGen } from "./journal.js";
import { loadFolder } from "./load.js";
import { readQuery, type ReadName } from "./reads.js";
import { snapshotGen, writeSnapshot } from "./snapshot.js";
import { pragmaNumber, type Sql } from "./sql.js";

/** The snapshot settings of {@link SqlJsStorageOptions}, which is all the engine needs of them. */
export interface EngineSettings {
  dir: string;
  snapshotRatio?: number;
  snapshotMinBytes?: number;
  snapshotMaxBytes?: number;
  snapshotIntervalMs?: number;
}

/** One snapshot being produced elsewhere. */
export interface SnapshotRun {
  /** Resolves with the snapshot's size once it is on disk and its process gone; rejects with the reason it is not. */
  done: Promise<number>;
  /** Abandons the snapshot: kills its process and removes its temporary file; resolves once both are gone. */
  stop(): Promise<void>;
}

/** Produces snapshot `gen` of `dir` from the files alone: the newest snapshot and the journals before `gen`. */
export type Snapshotter = (dir: string, gen: number) => SnapshotRun;

/**
 * Given when the engine has a process of its own (the database process), where nothing but the
 * engine waits on its thread: snapshots are produced by snapshot processes, and the journal is
 * written and fsynced on the thread itself (see {@link JournalWriter}).
 */
export interface OwnProcess {
  snapshotter: Snapshotter;
  /**
   * A database smaller than this is still exported on the engine's thread: about 2 ms per MiB,
   * less than starting a process and loading sql.js in it (100 ms or more, 40 MB). Default 1 MiB.
   */
  inPlaceBelowBytes?: number;
}

/**
 * The durability engine: the database in memory, its journal and its snapshots. It runs wherever
 * the database lives (the database process, or the caller's thread when the storage runs in
 * process) and knows nothing of locks, sockets or owners beyond what a journal op says.
 *
 * Every write is applied, then journaled and fsynced (group commit) before it resolves; every read
 * waits until each write it could have seen is on disk.
 *
 * A snapshot starts by rotating the journal to a new generation N. Given a {@link Snapshotter}
 * (the database process), that is all the engine does for a database of 1 MiB or more: once
 * generation N-1 is on disk, a snapshot process builds `snapshot-N` from the files (the newest
 * snapshot plus the journals before N) while the engine goes on answering, and the files it
 * supersedes are deleted only once it succeeded.
 * Otherwise (in process, or a small database) the engine exports its own database in the same
 * synchronous step as the rotation, so no record falls between the two.
 */
export class Engine {
  readonly #settings: EngineSettings;
  readonly #SQL: SqlJsStatic;
  readonly #warn: (message: string) => void;
  readonly #own: OwnProcess | undefined;
  #state: "open" | "closed" = "open";
  /** close() has begun: no snapshot process is started any more. */
  #closing = false;
  #db!: Database;
  #sql!: Sql;
  #journal!: JournalWriter;
  /** Journal generation new records go to. */
  #gen = 1;
  /** Generations of the snapshots on disk, oldest first. */
  #snapshots: number[] = [];
  #snapshotBytes = 0;
  /** Journal bytes since the last rotation: what decides when the next snapshot is due. */
  #journalBytes = 0;
  /** Journal bytes that no snapshot on disk holds yet: the closing snapshot is needed while above 0. */
  #uncovered = 0;
  #snapshotting: Promise<void> | undefined;
  /** The snapshot process at work, if any. */
  #run: SnapshotRun | undefined;
  #timer: NodeJS.Timeout | undefined;
  /**
   * Set while the bytes of an export on this thread are being copied to disk (never with a
   * snapshot process, which leaves this process's memory alone). Writes wait for it: a write that
   * grew the database could make sql.js move its in-memory file to a larger buffer, and for a
   * moment the process would hold the old file, the new one and the export (three times the
   * database).
   */
  #held: Promise<void> | undefined;
  /** Set while the database is reloaded from disk after a journal write failed. */
  #recovering: Promise<void> | undefined;
  /** The last journal failure and when it happened: writes fail at once for a while after it. */
  #failure: { error: unknown; at: number } | undefined;

  private constructor(
    settings: EngineSettings,
    SQL: SqlJsStatic,
    warn: (message: string) => void,
    own: OwnProcess | undefined,
  ) {
    this.#settings = settings;
    this.#SQL = SQL;
    this.#warn = warn;
    this.#own = own;
  }

  /**
   * Loads the folder (the caller holds its lock) and starts taking snapshots: with `own`, in
   * other processes (but for a small database); without, by exporting on this thread.
   */
  static async open(
    settings: EngineSettings,
    SQL: SqlJsStatic,
    warn: (message: string) => void,
    own?: OwnProcess,
  ): Promise<Engine> {
    const engine = new Engine(settings, SQL, warn, own);
    const migrated = await engine.#load();
    const every = settings.snapshotIntervalMs ?? 10 * 60_000;
    if (every > 0) {
      engine.#timer = setInterval(() => {
        if (engine.#journalBytes > 0) engine.#snapshotSoon(true);
      }, every);
      engine.#timer.unref();
    }
    engine.#snapshotSoon(migrated);
    return engine;
  }

  /** Resolves whether the schema was migrated: snapshot right away so the next start need not. */
  async #load(): Promise<boolean> {
    const loaded = await loadFolder(this.#settings.dir, this.#SQL, this.#warn);
    this.#db = loaded.db;
    this.#sql = loaded.sql;
    this.#gen = loaded.gen;
    this.#snapshots = loaded.snapshots;
    this.#snapshotBytes = loaded.snapshotBytes;
    this.#journalBytes = loaded.journalBytes;
    // A migration is in no snapshot either, until one is written after it.
    this.#uncovered = loaded.journalBytes + (loaded.migrated ? 1 : 0);
    this.#journal = new JournalWriter(this.#settings.dir, { blocking: this.#own !== undefined });
    return loaded.migrated;
  }

  /**
   * Resolves once the engine can be used: the database in step with the disk and (for a write)
   * no snapshot copy in progress. After a failed journal write the database holds changes that
   * never reached the disk, so it is first reloaded from the disk (everything acknowledged is
   * there); a full disk so never needs a restart.
   */
  async #settled(forWrite: boolean): Promise<void> {
    for (;;) {
      if (this.#state !== "open") throw new Error("sql.js storage: the storage is closed");
      if (this.#recovering) await this.#recovering;
      else if (this.#journal.failure !== undefined)
        this.#recovering = this.#recover().finally(() => (this.#recovering = undefined));
      else if (forWrite && this.#held) await this.#held;
      else return;
    }
  }

  /** Reloads the newest snapshot and the journals: the state as of the last acknowledged write. */
  async #recover(): Promise<void> {
    const failure = this.#journal.failure;
    this.#failure = { error: failure, at: Date.now() };
    this.#warn(
      `sql.js storage: a journal write failed (${(failure as Error)?.message ?? String(failure)}); reloading what is on disk`,
    );
    await this.#journal.close().catch(() => undefined);
    await this.#snapshotting;
    this.#closeDb();
    await this.#load();
  }

  #closeDb(): void {
    try {
      this.#sql.free();
      this.#db.close();
    } catch {
      // A reload after a journal failure that failed itself has closed them already.
    }
  }

  /**
   * Applies a write to the database, then journals it; resolves once it is on disk. Applying
   * first means a write that fails (bad value, constraint) rejects with nothing journaled.
   */
  async write(op: JournalOp): Promise<OpResult> {
    await this.#settled(true);
    // Soon after a failure the disk is most likely still full: refuse at once rather than apply,
    // fail and reload the whole database again for every write.
    if (this.#failure && Date.now() - this.#failure.at < RETRY_AFTER_FAILURE_MS) throw writeFailed(this.#failure.error);
    const record = encodeRecord(JSON.stringify(op));
    const result = this.#sql.transaction(() => applyOp(this.#sql, op));
    const durable = this.#journal.append(this.#gen, record);
    this.#journalBytes += record.length;
    this.#uncovered += record.length;
    this.#snapshotSoon(false);
    try {
      await durable;
    } catch (error) {
      throw writeFailed(error);
    }
    return result;
  }

  /**
   * Runs a named read, then waits until every write it could have seen is on disk, so nobody is
   * ever shown (and acts on) a change that a crash could still take back.
   */
  async read(name: ReadName, args: unknown[]): Promise<unknown> {
    await this.#settled(false);
    const journal = this.#journal;
    const lsn = journal.appendedLsn;
    const out = readQuery(this.#sql, name, args);
    await journal.waitDurable(lsn).catch((error: unknown) => {
      throw writeFailed(error);
    });
    return out;
  }

  #snapshotThreshold(): number {
    const min = this.#settings.snapshotMinBytes ?? 8 * 1024 * 1024;
    const max = Math.max(min, this.#settings.snapshotMaxBytes ?? 16 * 1024 * 1024);
    return Math.min(max, Math.max(min, (this.#settings.snapshotRatio ?? 0.25) * this.#snapshotBytes));
  }

  #snapshotSoon(force: boolean): void {
    if (
      this.#snapshotting ||
      this.#recovering ||
      this.#closing ||
      this.#state !== "open" ||
      this.#journal.failure !== undefined
    )
      return;
    if (!force && this.#journalBytes < this.#snapshotThreshold()) return;
    this.#snapshotting = new Promise<void>((resolve) => setImmediate(resolve))
      // Not while the database holds writes the journal failed to keep: they are about to be dropped.
      .then(() => {
        if (this.#state !== "open" || this.#journal.failure !== undefined) return;
        return this.#own && this.#databaseBytes() >= (this.#own.inPlaceBelowBytes ?? 1024 * 1024)
          ? this.#snapshotElsewhere(this.#own.snapshotter)
          : this.#snapshot();
      })
      // A background snapshot has no caller to reject to; the journal still holds everything.
      .catch((error: unknown) =>
        this.#warn(`sql.js storage: snapshot failed, the journal keeps everything: ${(error as Error).message}`),
      )
      .finally(() => {
        this.#snapshotting = undefined;
      });
  }

  /**
   * Exports the database and rotates the journal in one synchronous step, so every record up to
   * this point is in the snapshot and every later one is in the new generation.
   */
  async #snapshot(): Promise<void> {
    const gen = this.#gen + 1;
    const bytes = this.#db.export();
    // writeSnapshot takes the bytes over; the array is empty once it returns.
    const size = bytes.length;
    const covered = this.#rotate(gen);
    const unhold = this.#hold();
    try {
      await writeSnapshot(this.#settings.dir, gen, bytes, unhold);
    } catch (error) {
      this.#warn(`sql.js storage: snapshot failed, the journal keeps everything: ${(error as Error).message}`);
      return;
    } finally {
      unhold();
    }
    await this.#snapshotWritten(gen, size, covered);
  }

  #databaseBytes(): number {
    return pragmaNumber(this.#db, "page_count") * pragmaNumber(this.#db, "page_size");
  }

  /** Moves new records to generation `gen`; returns the journal bytes a snapshot `gen` will hold. */
  #rotate(gen: number): number {
    this.#gen = gen;
    // Reset before the snapshot is written: after a failure the next attempt waits for another
    // threshold of journal, rather than trying again on every write while the disk is full.
    this.#journalBytes = 0;
    return this.#uncovered;
  }

  async #snapshotWritten(gen: number, size: number, covered: number): Promise<void> {
    this.#snapshotBytes = size;
    this.#uncovered -= covered;
    this.#snapshots.push(gen);
    await this.#dropOldGenerations(gen);
  }

  /**
   * Rotates the journal and has a snapshot process write snapshot `gen` from the generations
   * before it, while this engine keeps answering: nothing here waits for it but the next snapshot
   * and close(). A snapshot that fails (or whose process dies) costs nothing but the attempt: the
   * journals stay, and the next attempt comes after another threshold of journal, as on this thread.
   */
  async #snapshotElsewhere(snapshotter: Snapshotter): Promise<void> {
    const gen = this.#gen + 1;
    const covered = this.#rotate(gen);
    // The snapshot process reads the closed generations from disk: every record of them first.
    await this.#journal.waitDurable();
    if (this.#closing) return;
    const run = snapshotter(this.#settings.dir, gen);
    this.#run = run;
    let size: number;
    try {
      size = await run.done;
    } catch (error) {
      // Killed by close(), whose own snapshot supersedes it: nothing to warn about.
      if (this.#closing) return;
      throw error;
    } finally {
      this.#run = undefined;
    }
    await this.#snapshotWritten(gen, size, covered);
  }

  /** Makes writes wait until the returned function is called. */
  #hold(): () => void {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    this.#held = held;
    return () => {
      if (this.#held === held) this.#held = undefined;
      release();
    };
  }

  /** Keeps the previous snapshot and the journals since it, as a fallback should the newest be damaged. */
  async #dropOldGenerations(gen: number): Promise<void> {
    const keepFrom = this.#snapshots.at(-2) ?? gen;
    for (const n of await readdir(this.#settings.dir)) {
      const g = snapshotGen(n) ?? journalGen(n);
      if (g !== undefined && g < keepFrom) await rm(join(this.#settings.dir, n), { force: true });
    }
    this.#snapshots = this.#snapshots.filter((g) => g >= keepFrom);
  }

  /**
   * Waits for pending writes, snapshots a journal that no snapshot holds yet and closes the
   * database. A snapshot process still at work is killed rather than waited for (it could take
   * seconds at a million messages under load): the closing snapshot, exported here where no call
   * is left to wait for it, holds more than it would have, so close takes one export as before.
   */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    clearInterval(this.#timer);
    this.#closing = true;
    // First, as a reload after a journal failure waits for the snapshot in progress.
    await this.#run?.stop();
    await this.#recovering?.catch(() => undefined);
    await this.#snapshotting;
    this.#state = "closed";
    await this.#journal.close();
    if (this.#uncovered > 0 && this.#journal.failure === undefined) {
      try {
        await this.#snapshot();
      } catch (error) {
        this.#warn(
          `sql.js storage: closing snapshot failed, the journal keeps everything: ${(error as Error).message}`,
        );
      }
    }
    this.#closeDb();
  }
}
