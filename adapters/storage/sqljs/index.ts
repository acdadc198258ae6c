/**
 * Embedded {@link Storage} on sql.js (SQLite compiled to WebAssembly), the default of `npm start`.
 * Nothing to install beside chat-gateway: `sql.js` is among its dependencies.
 *
 * The database lives in memory. Every write is applied to it and appended to a journal (length,
 * CRC-32, JSON of the change), fsynced in group-committed batches before the write resolves, so the
 * cost of a write does not grow with the database. Now and then the whole database is exported to
 * a snapshot (temporary file, fsync, rename) and the journal rotates to a new generation; a start
 * loads the newest intact snapshot and replays the journals written since. A torn or corrupt
 * journal tail is dropped with a warning and everything before it is kept.
 *
 * The database and its journal live in a process of their own (the database process, started by
 * `open()` and stopped by `close()`), and the storage is a thin asynchronous proxy to it: sql.js
 * blocks whatever thread runs it, and so never stalls the process that serves sockets. A
 * write resolves once the database process has fsynced its journal record. The serving process
 * holds the folder's lock; the database process exits as soon as its parent is gone. Being the
 * only writer, the storage answers two reads itself from what it read and wrote before: an owner's
 * outbox bounds until a write may move them, and that an owner has no waiting or streaming message.
 *
 * Should the database process die (out of memory, the kernel's OOM killer, a kill), the calls it
 * had in flight fail with `internal` ("… stopped while this request was in flight …; send it
 * again": a write among them may have been kept), and a new one is started on the same folder,
 * which loads the snapshot and the journal, so holds every acknowledged write; calls made
 * meanwhile wait for it. After 3 restarts within a minute, or 3 failed ones, the storage gives up:
 * every call fails, and `onFatal` (by default: a throw that ends the process) tells the owner to
 * exit, for the process manager to start the server afresh.
 *
 * The database process does not export either: when a snapshot is due it only rotates the journal
 * to a new generation N and starts a short-lived snapshot process, which loads the newest snapshot
 * and the journals before N exactly as a start does, exports (1 to 2 s at a million messages,
 * several times that on a busy machine) and writes `snapshot-N`, while the database process goes
 * on answering every call. Once it has succeeded the files it supersedes are deleted; should it
 * fail or die, the journals keep everything and a later attempt follows. It holds a second copy of
 * the database while it runs (one at a time), in its own memory, and exits with its parent. A
 * database under 1 MiB is still exported in the database process (a millisecond or two, less than
 * starting a process). `close()` stops a snapshot process still at work and writes the closing
 * snapshot itself, as no call is left to wait for it. `inProcess` runs all of it on the calling
 * thread instead, exporting there: the exported bytes are handed to a worker thread that copies
 * them into the file and exits, which frees them at once; writes issued meanwhile wait and are
 * acknowledged right after.
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
import type {
  ChatId,
  Device,
  DeviceId,
  MediaId,
  MediaRecord,
  MessageId,
  Owner,
  SearchHit,
  Seq,
  StoredMessage,
  Channel,
  Logger,
} from "chat-gateway";
import type {
  AdoptedCounts,
  LaneUnread,
  ReadMark,
  AdoptionRefused,
  Change,
  CommitResult,
  HistoryPage,
  HistoryQuery,
  HookStore,
  OutboxBounds,
  OutboxEntry,
  RetentionPolicy,
  SearchQuery,
  ScheduleStore,
  Storage,
  StorageImplementation,
  TurnScope,
} from "chat-gateway/storage";
import { defineStorage, makePrivateDir } from "chat-gateway/storage";
import type { JournalOp } from "./apply.js";
import { startEngineHere, type EngineCall, type EngineLink } from "./engine-calls.js";
import { startEngineProcess } from "./engine-process.js";
import { SupervisedEngine } from "./engine-supervisor.js";
import type { EngineSettings } from "./engine.js";
import { acquireLock } from "./lock.js";
import { sqlJsActionTokens } from "./action-tokens.js";
import { sqlJsDuePushes } from "./due-pushes.js";
import { sqlJsHooks } from "./hooks.js";
import { sqlJsSchedules } from "./schedules.js";
import { BoundsCache } from "./bounds-cache.js";
import { OwnerGate } from "./owner-gate.js";
import { checkOptions, type SqlJsStorageOptions } from "./options.js";
import type { ReadName } from "./reads.js";
import { TurnOwners } from "./turn-owners.js";
import { SCHEMA_VERSION as MIGRATED_TO } from "./schema.js";

export { DataDirLockedError } from "./lock.js";
export type { Holder } from "./lock.js";
export { SchemaTooNewError } from "./schema-error.js";
export type { SqlJsStorageOptions, SqlJsModule } from "./options.js";

// Declared here rather than re-exported, so this entry's declarations never import schema.ts's,
// which name sql.js's types: a user's tsc would need @types/sql.js and the DOM library for them.
/** The schema version this code writes; stored in `PRAGMA user_version`. */
export const SCHEMA_VERSION: number = MIGRATED_TO;

/** Hits whose snippets one read builds: each reads its message's text (about 1 ms per MiB). */
const SNIPPETS_PER_READ = 10;

/**
 * The sql.js storage: a {@link Storage} whose `open` and `close` always exist, and the
 * {@link HookStore} and {@link ScheduleStore} of the same database, whose hooks and schedules
 * `adoptOwner` moves with the channels: `createGateway({ storage, hookStore: storage, scheduleStore: storage })`.
 */
export interface SqlJsStorage extends Storage, HookStore, ScheduleStore {
  /**
   * Takes the folder's lock, starts the database process, and loads the newest intact snapshot
   * and the journal in it; resolves once the storage answers.
   */
  open(): Promise<void>;
  /** Waits for pending writes, snapshots a non-empty journal, stops the database process and releases the lock. */
  close(): Promise<void>;
}

/**
 * Creates the sql.js {@link Storage} over the data folder `dir`. Nothing touches the disk before
 * `open()`, which takes the folder's lock, loads and replays it.
 */
export function sqlJsStorage(options: SqlJsStorageOptions): SqlJsStorage {
  // Every capability (fencing too) but uniqueClientMsgId: the folder's lock keeps other processes out.
  const store = new SqlJsStore(options, checkOptions(options));
  return Object.assign(defineStorage(store), store.hooks, store.schedules);
}

class SqlJsStore implements StorageImplementation {
  /** One database process applies every op in turn: lane tokens are checked and raised atomically. */
  readonly capabilities = { fencing: true };
  readonly #options: SqlJsStorageOptions;
  readonly #logger: Logger;
  readonly #warn: (message: string) => void;
  #state: "new" | "opening" | "open" | "closed" = "new";
  #link: EngineLink | undefined;
  #release: (() => Promise<void>) | undefined;
  /** At most a few expensive reads per owner in flight (see {@link OwnerGate}). */
  readonly #gate = new OwnerGate();
  /** Owners that may have a waiting or streaming message (see {@link TurnOwners}). */
  readonly #turnOwners = new TurnOwners();
  /** Outbox bounds read recently (see {@link BoundsCache}). */
  readonly #bounds = new BoundsCache((owner) => this.#read<OutboxBounds>("outboxBounds", owner));
  // The actionTokens capability (docs/PROTOCOL.md §21): see action-tokens.ts.
  readonly actionTokens = sqlJsActionTokens(
    (name, ...args) => this.#read(name, ...args),
    (op) => this.#write(op),
  );
  // The duePushes capability (docs/PROTOCOL.md §21.6): see due-pushes.ts.
  readonly duePushes = sqlJsDuePushes((op) => this.#write(op));
  // Its hook and schedule stores (docs/PROTOCOL.md §17), in the same database: see hooks.ts, schedules.ts.
  readonly hooks = sqlJsHooks(
    (name, ...args) => this.#read(name, ...args),
    (op) => this.#write(op),
  );
  readonly schedules = sqlJsSchedules(
    (name, ...args) => this.#read(name, ...args),
    (op) => this.#write(op),
  );

  constructor(options: SqlJsStorageOptions, logger: Logger) {
    this.#options = options;
    this.#logger = logger;
    this.#warn = (message) => logger.warn(message);
  }

  /** The database process is down for good: its owner decides, or the process ends (see {@link SqlJsStorageOptions.onFatal}). */
  #fatal(error: Error): void {
    this.#logger.error(`${error.message}: the storage is down`);
    const { onFatal } = this.#options;
    if (onFatal) onFatal(error);
    else
      setImmediate(() => {
        throw error;
      });
  }

  async open(): Promise<void> {
    if (this.#state !== "new") throw new Error(`sql.js storage: open() called on a storage that is ${this.#state}`);
    this.#state = "opening";
    const { dir, snapshotRatio, snapshotMinBytes, snapshotMaxBytes, snapshotIntervalMs } = this.#options;
    const loosened = await makePrivateDir(dir, "sql.js storage");
    if (loosened) this.#warn(loosened);
    this.#release = await acquireLock(dir, this.#warn);
    // Plain values only: the settings cross to the database process.
    const settings: EngineSettings = { dir, snapshotRatio, snapshotMinBytes, snapshotMaxBytes, snapshotIntervalMs };
    try {
      const here = this.#options.inProcess || this.#options.sqlJs !== undefined;
      this.#link = here
        ? await startEngineHere(settings, this.#options.sqlJs, this.#warn)
        : await SupervisedEngine.start(
            (onStop) => startEngineProcess(settings, this.#warn, onStop),
            this.#warn,
            (error) => this.#fatal(error),
          );
    } catch (error) {
      await this.#release();
      this.#state = "closed";
      throw error;
    }
    this.#state = "open";
    // Nothing was written yet, so these rows are all there are until the next write; should the
    // reads fail, every later one goes to the database.
    type Rows = Array<{ owner: Owner }>;
    const reads = [this.#read<Rows>("waitingTurns"), this.#read<Rows>("unfinishedMessages")];
    const rows = await Promise.all(reads).catch(() => undefined);
    if (rows) this.#turnOwners.load(rows.flat());
  }

  #call(call: EngineCall): Promise<unknown> {
    if (this.#state !== "open" || !this.#link) {
      return Promise.reject(
        new Error(
          `sql.js storage: the storage is ${this.#state === "new" || this.#state === "opening" ? "not open yet" : "closed"}`,
        ),
      );
    }
    return this.#link.call(call);
  }

  #read<T>(name: ReadName, ...args: unknown[]): Promise<T> {
    return this.#call({ kind: "read", name, args }) as Promise<T>;
  }

  #write(op: JournalOp): Promise<unknown> {
    this.#turnOwners.writing(op);
    const settled = this.#bounds.writing(op);
    const written = this.#call({ kind: "write", op });
    if (settled) written.then(settled, settled);
    return written;
  }

  async ping(): Promise<void> {
    await this.#read("ping");
  }

  async close(): Promise<void> {
    if (this.#state === "closed" || this.#state === "new") {
      this.#state = "closed";
      return;
    }
    this.#state = "closed";
    try {
      await this.#link?.close();
    } finally {
      await this.#release?.();
    }
  }

  async commit(owner: Owner, change: Change): Promise<CommitResult> {
    return (await this.#write({ k: "commit", o: owner, c: change, t: Date.now() })) as CommitResult;
  }

  getChannel(owner: Owner, chatId: ChatId): Promise<Channel | undefined> {
    return this.#read("getChannel", owner, chatId);
  }

  listChannels(owner: Owner): Promise<Channel[]> {
    return this.#read("listChannels", owner);
  }

  getMessage(owner: Owner, messageId: MessageId): Promise<StoredMessage | undefined> {
    return this.#read("getMessage", owner, messageId);
  }

  findByClientMsgId(owner: Owner, chatId: ChatId, clientMsgId: string): Promise<StoredMessage | undefined> {
    return this.#read("findByClientMsgId", owner, chatId, clientMsgId);
  }

  history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined> {
    return this.#gate.run(owner, () => this.#read("history", owner, query));
  }

  unfinishedMessages(scope?: TurnScope): Promise<Array<{ owner: Owner; message: StoredMessage }>> {
    if (!this.#turnOwners.mayHave(scope?.owner)) return this.#none();
    return scope ? this.#read("unfinishedMessages", scope) : this.#read("unfinishedMessages");
  }

  waitingTurns(scope?: TurnScope): Promise<Array<{ owner: Owner; message: StoredMessage }>> {
    if (!this.#turnOwners.mayHave(scope?.owner)) return this.#none();
    return scope ? this.#read("waitingTurns", scope) : this.#read("waitingTurns");
  }

  /** No rows, as the database would answer (a closed storage still refuses). */
  #none(): Promise<never[]> {
    if (this.#state === "open") return Promise.resolve([]);
    return this.#call({ kind: "read", name: "waitingTurns", args: [] }).then(() => []);
  }

  /** Ranked first, then snippets a few hits per read, so no single read holds the process up. */
  search(owner: Owner, query: SearchQuery): Promise<SearchHit[]> {
    return this.#gate.run(owner, async () => {
      const rows = await this.#read<Array<[number, string]>>("searchRanked", owner, query);
      const hits: SearchHit[] = [];
      for (let i = 0; i < rows.length; i += SNIPPETS_PER_READ) {
        hits.push(
          ...(await this.#read<SearchHit[]>("searchHits", owner, rows.slice(i, i + SNIPPETS_PER_READ), query.query)),
        );
      }
      return hits;
    });
  }

  readOutbox(owner: Owner, after: Seq, limit: number, types?: readonly string[]): Promise<OutboxEntry[]> {
    return this.#gate.run(owner, () => this.#read("readOutbox", owner, after, limit, types));
  }

  outboxBounds(owner: Owner): Promise<OutboxBounds> {
    // A storage not open answers from the database link, as every other read does (it refuses).
    return this.#state === "open" ? this.#bounds.get(owner) : this.#read("outboxBounds", owner);
  }

  async pruneOutbox(owner: Owner, policy: RetentionPolicy, now: number): Promise<void> {
    // JSON has no Infinity (it would replay as null, i.e. 0): "no limit" is journaled as a huge number.
    const bound = (n: number) => (Number.isFinite(n) ? n : Number.MAX_SAFE_INTEGER);
    await this.#write({
      k: "prune",
      o: owner,
      p: { maxFrames: bound(policy.maxFrames), maxAgeMs: bound(policy.maxAgeMs) },
      t: now,
    });
  }

  getDevice(owner: Owner, deviceId: DeviceId): Promise<Device | undefined> {
    return this.#read("getDevice", owner, deviceId);
  }

  listDevices(owner: Owner): Promise<Device[]> {
    return this.#read("listDevices", owner);
  }

  async putDevice(owner: Owner, device: Device): Promise<void> {
    await this.#write({ k: "device", o: owner, d: device });
  }

  getMedia(owner: Owner, mediaId: MediaId): Promise<MediaRecord | undefined> {
    return this.#read("getMedia", owner, mediaId);
  }

  async putMedia(owner: Owner, media: MediaRecord): Promise<void> {
    await this.#write({ k: "media", o: owner, m: media });
  }

  async deleteMedia(owner: Owner, mediaIds: MediaId[]): Promise<void> {
    await this.#write({ k: "unmedia", o: owner, ids: mediaIds });
  }

  async adoptOwner(from: Owner, to: Owner): Promise<AdoptedCounts | AdoptionRefused> {
    return (await this.#write({ k: "adopt", o: from, to })) as AdoptedCounts | AdoptionRefused;
  }

  // The readState capability (docs/PROTOCOL.md §15): see read-marks.ts.
  readMarks(owner: Owner): Promise<ReadMark[]> {
    return this.#read("readMarks", owner);
  }

  unreadCounts(owner: Owner, cap: number): Promise<LaneUnread[]> {
    return this.#gate.run(owner, () => this.#read("unreadCounts", owner, cap));
  }
}
