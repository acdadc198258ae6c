/**
 * Embedded {@link Storage} on sql.js (SQLite compiled to WebAssembly), the default of `npm start`.
 * Needs the optional peer dependency `sql.js`.
 *
 * The database lives in memory. Every write is applied to it and appended to a journal (length,
 * CRC-32, JSON of the change), fsynced in group-committed batches before the write resolves, so the
 * cost of a write does not grow with the database. Now and then the whole database is exported to
 * a snapshot (temporary file, fsync, rename) and the journal rotates to a new generation; a start
 * loads the newest intact snapshot and replays the journals written since. A torn or corrupt
 * journal tail is dropped with a warning and everything before it is kept.
 *
 * The export blocks the event loop (about 1 to 2 s at a million messages). The exported bytes are
 * then handed to a worker thread that copies them into the file and exits, which frees them at
 * once (0.2 s for 750 MB); writes issued meanwhile wait and are acknowledged right after, and none
 * is lost, since the journal keeps every record after the snapshot point in the next generation.
 * The process so holds the database about twice while a snapshot is taken, and once otherwise.
 *
 * Snapshots are taken when the journal outgrows a fraction of the database (bounded below and
 * above, see {@link SqlJsStorageOptions}), which keeps their cost per write about constant and the
 * replay at start short. The previous snapshot and the journals since it are kept as a fallback,
 * should the newest snapshot turn out damaged.
 *
 * A journal write that fails (a full disk) rejects every write in flight; the database, which is
 * then ahead of the disk, is reloaded from the disk before the next read or write, so the storage
 * works again as soon as there is space, without a restart. A write that was refused may still be
 * kept, as after a crash; an acknowledged one is never lost. The folder and its files are private
 * to the owner (0700, 0600).
 *
 * Search uses FTS4, split in shards of 32,768 messages so that no write ever merges the index of
 * the whole history (see `fts-shards.ts`).
 *
 * ```ts
 * import { sqlJsStorage } from "chat-gateway/storage/sqljs";
 * const storage = sqlJsStorage({ dir: "./data" });
 * ```
 * @module
 */
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import initSqlJs from "sql.js";
import type { Database } from "sql.js";
import type {
  Change,
  ChatId,
  CommitResult,
  Device,
  DeviceId,
  HistoryPage,
  HistoryQuery,
  MediaId,
  MediaRecord,
  MessageId,
  OutboxBounds,
  OutboxEntry,
  Owner,
  RetentionPolicy,
  SearchHit,
  SearchQuery,
  Seq,
  Storage,
  StorageImplementation,
  StoredMessage,
  Channel,
  Logger,
} from "chat-gateway";
import { defineStorage } from "chat-gateway";
import { applyOp, type JournalOp } from "./apply.js";
import { RETRY_AFTER_FAILURE_MS, writeFailed } from "./disk-errors.js";
import { makePrivateDir } from "./file-modes.js";
import { JournalWriter, encodeRecord, journalGen } from "./journal.js";
import { loadFolder } from "./load.js";
import { acquireLock } from "./lock.js";
import { checkOptions, type SqlJsStorageOptions } from "./options.js";
import { queries } from "./queries.js";
import { search } from "./search.js";
import { snapshotGen, writeSnapshot } from "./snapshot.js";
import type { Sql } from "./sql.js";

export { DataDirLockedError } from "./lock.js";
export type { Holder } from "./lock.js";
export { SchemaTooNewError, SCHEMA_VERSION } from "./schema.js";
export type { SqlJsStorageOptions } from "./options.js";

/** The sql.js storage: a {@link Storage} whose `open` and `close` always exist. */
export interface SqlJsStorage extends Storage {
  /** Takes the folder's lock, loads the newest intact snapshot and replays the journal. */
  open(): Promise<void>;
  /** Waits for pending writes, snapshots a non-empty journal, and releases the lock. */
  close(): Promise<void>;
}

/**
 * Creates the sql.js {@link Storage} over the data folder `dir`. Nothing touches the disk before
 * `open()`, which takes the folder's lock, loads and replays it.
 */
export function sqlJsStorage(options: SqlJsStorageOptions): SqlJsStorage {
  // Every capability but uniqueClientMsgId: the folder's lock keeps other processes out.
  return defineStorage(new SqlJsStore(options, checkOptions(options)));
}

class SqlJsStore implements StorageImplementation {
  readonly #dir: string;
  readonly #options: SqlJsStorageOptions;
  readonly #warn: (message: string) => void;
  #state: "new" | "opening" | "open" | "closed" = "new";
  #db!: Database;
  #sql!: Sql;
  #journal!: JournalWriter;
  #release: (() => Promise<void>) | undefined;
  /** Journal generation new records go to. */
  #gen = 1;
  /** Generations of the snapshots on disk, oldest first. */
  #snapshots: number[] = [];
  #snapshotBytes = 0;
  #journalBytes = 0;
  #snapshotting: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #migrated = false;
  /**
   * Set while the exported bytes are being copied to disk. Writes wait for it: a write that grew
   * the database could make sql.js move its in-memory file to a larger buffer, and for a moment
   * the process would hold the old file, the new one and the export (three times the database).
   */
  #held: Promise<void> | undefined;
  /** Set while the database is reloaded from disk after a journal write failed. */
  #recovering: Promise<void> | undefined;
  /** The last journal failure and when it happened: writes fail at once for a while after it. */
  #failure: { error: unknown; at: number } | undefined;

  constructor(options: SqlJsStorageOptions, logger: Logger) {
    this.#dir = options.dir;
    this.#options = options;
    this.#warn = (message) => logger.warn(message);
  }

  async open(): Promise<void> {
    if (this.#state !== "new") throw new Error(`sql.js storage: open() called on a storage that is ${this.#state}`);
    this.#state = "opening";
    const loosened = await makePrivateDir(this.#dir);
    if (loosened) this.#warn(loosened);
    this.#release = await acquireLock(this.#dir, this.#warn);
    try {
      await this.#load();
    } catch (error) {
      this.#db?.close();
      await this.#release();
      this.#state = "closed";
      throw error;
    }
    this.#state = "open";
    const every = this.#options.snapshotIntervalMs ?? 10 * 60_000;
    if (every > 0) {
      this.#timer = setInterval(() => {
        if (this.#journalBytes > 0) this.#snapshotSoon(true);
      }, every);
      this.#timer.unref();
    }
    this.#snapshotSoon(this.#migrated);
  }

  async #load(): Promise<void> {
    const loaded = await loadFolder(this.#dir, this.#options.sqlJs ?? (await initSqlJs()), this.#warn);
    this.#db = loaded.db;
    this.#sql = loaded.sql;
    this.#migrated = loaded.migrated;
    this.#gen = loaded.gen;
    this.#snapshots = loaded.snapshots;
    this.#snapshotBytes = loaded.snapshotBytes;
    this.#journalBytes = loaded.journalBytes;
    this.#journal = new JournalWriter(this.#dir);
  }

  /**
   * Resolves once the storage can be used: open, the database in step with the disk, and (for a
   * write) no snapshot copy in progress. After a failed
   * journal write the database holds changes that never reached the disk, so it is first reloaded
   * from the disk (everything acknowledged is there); a full disk so never needs a restart.
   */
  async #settled(forWrite: boolean): Promise<void> {
    for (;;) {
      if (this.#state !== "open") throw new Error(`sql.js storage: the storage is ${this.#state === "new" || this.#state === "opening" ? "not open yet" : "closed"}`);
      if (this.#recovering) await this.#recovering;
      else if (this.#journal.failure !== undefined) this.#recovering = this.#recover().finally(() => (this.#recovering = undefined));
      else if (forWrite && this.#held) await this.#held;
      else return;
    }
  }

  /** Reloads the newest snapshot and the journals: the state as of the last acknowledged write. */
  async #recover(): Promise<void> {
    const failure = this.#journal.failure;
    this.#failure = { error: failure, at: Date.now() };
    this.#warn(`sql.js storage: a journal write failed (${(failure as Error)?.message ?? String(failure)}); reloading what is on disk`);
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
  async #write(op: JournalOp): Promise<CommitResult | undefined> {
    await this.#settled(true);
    // Soon after a failure the disk is most likely still full: refuse at once rather than apply,
    // fail and reload the whole database again for every write.
    if (this.#failure && Date.now() - this.#failure.at < RETRY_AFTER_FAILURE_MS) throw writeFailed(this.#failure.error);
    const record = encodeRecord(JSON.stringify(op));
    const result = this.#sql.transaction(() => applyOp(this.#sql, op));
    const durable = this.#journal.append(this.#gen, record);
    this.#journalBytes += record.length;
    this.#snapshotSoon(false);
    try {
      await durable;
    } catch (error) {
      throw writeFailed(error);
    }
    return result;
  }

  /**
   * Runs a read, then waits until every write it could have seen is on disk, so nobody is ever
   * shown (and acts on) a change that a crash could still take back.
   */
  async #read<T>(fn: () => T): Promise<T> {
    await this.#settled(false);
    const journal = this.#journal;
    const lsn = journal.appendedLsn;
    const out = fn();
    await journal.waitDurable(lsn).catch((error: unknown) => {
      throw writeFailed(error);
    });
    return out;
  }

  #snapshotThreshold(): number {
    const min = this.#options.snapshotMinBytes ?? 8 * 1024 * 1024;
    const max = Math.max(min, this.#options.snapshotMaxBytes ?? 16 * 1024 * 1024);
    return Math.min(max, Math.max(min, (this.#options.snapshotRatio ?? 0.25) * this.#snapshotBytes));
  }

  #snapshotSoon(force: boolean): void {
    if (this.#snapshotting || this.#recovering || this.#state !== "open" || this.#journal.failure !== undefined) return;
    if (!force && this.#journalBytes < this.#snapshotThreshold()) return;
    this.#snapshotting = new Promise<void>((resolve) => setImmediate(resolve))
      // Not while the database holds writes the journal failed to keep: they are about to be dropped.
      .then(() => (this.#state === "open" && this.#journal.failure === undefined ? this.#snapshot() : undefined))
      // A background snapshot has no caller to reject to; the journal still holds everything.
      .catch((error: unknown) => this.#warn(`sql.js storage: snapshot failed, the journal keeps everything: ${(error as Error).message}`))
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
    this.#gen = gen;
    // Reset before the write: after a failure the next attempt waits for another threshold of
    // journal, rather than exporting again on every write while the disk is full.
    this.#journalBytes = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    this.#held = held;
    const unhold = () => {
      if (this.#held === held) this.#held = undefined;
      release();
    };
    try {
      await writeSnapshot(this.#dir, gen, bytes, unhold);
    } catch (error) {
      this.#warn(`sql.js storage: snapshot failed, the journal keeps everything: ${(error as Error).message}`);
      return;
    } finally {
      unhold();
    }
    this.#snapshotBytes = size;
    this.#snapshots.push(gen);
    // Keep the previous snapshot and the journals since it, as a fallback should the newest be damaged.
    const keepFrom = this.#snapshots.at(-2) ?? gen;
    const names = await readdir(this.#dir);
    for (const n of names) {
      const g = snapshotGen(n) ?? journalGen(n);
      if (g !== undefined && g < keepFrom) await rm(join(this.#dir, n), { force: true });
    }
    this.#snapshots = this.#snapshots.filter((g) => g >= keepFrom);
  }

  async close(): Promise<void> {
    if (this.#state === "closed" || this.#state === "new") {
      this.#state = "closed";
      return;
    }
    clearInterval(this.#timer);
    await this.#recovering?.catch(() => undefined);
    await this.#snapshotting;
    this.#state = "closed";
    await this.#journal.close();
    if (this.#journalBytes > 0 && this.#journal.failure === undefined) {
      try {
        await this.#snapshot();
      } catch (error) {
        this.#warn(`sql.js storage: closing snapshot failed, the journal keeps everything: ${(error as Error).message}`);
      }
    }
    this.#closeDb();
    await this.#release?.();
  }

  async commit(owner: Owner, change: Change): Promise<CommitResult> {
    return (await this.#write({ k: "commit", o: owner, c: change, t: Date.now() }))!;
  }

  getChannel(owner: Owner, chatId: ChatId): Promise<Channel | undefined> {
    return this.#read(() => queries.getChannel(this.#sql, owner, chatId));
  }

  listChannels(owner: Owner): Promise<Channel[]> {
    return this.#read(() => queries.listChannels(this.#sql, owner));
  }

  getMessage(owner: Owner, messageId: MessageId): Promise<StoredMessage | undefined> {
    return this.#read(() => queries.getMessage(this.#sql, owner, messageId));
  }

  findByClientMsgId(owner: Owner, chatId: ChatId, clientMsgId: string): Promise<StoredMessage | undefined> {
    return this.#read(() => queries.findByClientMsgId(this.#sql, owner, chatId, clientMsgId));
  }

  history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined> {
    return this.#read(() => queries.history(this.#sql, owner, query));
  }

  unfinishedMessages(): Promise<Array<{ owner: Owner; message: StoredMessage }>> {
    return this.#read(() => queries.unfinishedMessages(this.#sql));
  }

  search(owner: Owner, query: SearchQuery): Promise<SearchHit[]> {
    return this.#read(() => search(this.#sql, owner, query));
  }

  readOutbox(owner: Owner, after: Seq, limit: number): Promise<OutboxEntry[]> {
    return this.#read(() => queries.readOutbox(this.#sql, owner, after, limit));
  }

  outboxBounds(owner: Owner): Promise<OutboxBounds> {
    return this.#read(() => queries.outboxBounds(this.#sql, owner));
  }

  async pruneOutbox(owner: Owner, policy: RetentionPolicy, now: number): Promise<void> {
    // JSON has no Infinity (it would replay as null, i.e. 0): "no limit" is journaled as a huge number.
    const bound = (n: number) => (Number.isFinite(n) ? n : Number.MAX_SAFE_INTEGER);
    await this.#write({ k: "prune", o: owner, p: { maxFrames: bound(policy.maxFrames), maxAgeMs: bound(policy.maxAgeMs) }, t: now });
  }

  getDevice(owner: Owner, deviceId: DeviceId): Promise<Device | undefined> {
    return this.#read(() => queries.getDevice(this.#sql, owner, deviceId));
  }

  listDevices(owner: Owner): Promise<Device[]> {
    return this.#read(() => queries.listDevices(this.#sql, owner));
  }

  async putDevice(owner: Owner, device: Device): Promise<void> {
    await this.#write({ k: "device", o: owner, d: device });
  }

  getMedia(owner: Owner, mediaId: MediaId): Promise<MediaRecord | undefined> {
    return this.#read(() => queries.getMedia(this.#sql, owner, mediaId));
  }

  async putMedia(owner: Owner, media: MediaRecord): Promise<void> {
    await this.#write({ k: "media", o: owner, m: media });
  }

  async deleteMedia(owner: Owner, mediaIds: MediaId[]): Promise<void> {
    await this.#write({ k: "unmedia", o: owner, ids: mediaIds });
  }
}
