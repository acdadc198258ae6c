/**
 * The `Storage` contract: what a database must do for the gateway.
 *
 * You write a {@link StorageImplementation}: a small required core plus any optional members
 * (capabilities) your database can do better than the gateway's fallback. `defineStorage()`
 * turns it into a {@link Storage}, the one shape the gateway calls. Built-in: memory
 * (`chat-gateway/storage/memory`), sql.js (`chat-gateway/storage/sqljs`), PostgreSQL
 * (`chat-gateway/storage/postgres`). `describeStorageConformance` from `chat-gateway/testing` checks
 * the core always and each capability you declare (its fallback otherwise); docs/CUSTOM-STORAGE.md
 * walks through writing one.
 *
 * Storage is the chat data. Webhooks and schedules are contracts of their own, `HookStore` and
 * `ScheduleStore`, passed to `createGateway` beside it; the built-in storages implement them too.
 * @module
 */
import type { ChatId, DeviceId, MediaId, MessageId, Owner, Seq } from "../protocol/ids.js";
import type { Channel, Device, MediaRecord, SearchHit, StoredMessage } from "./records.js";
import type { ActionTokenStore } from "./action-tokens.js";
import type { DuePushStore } from "./due-pushes.js";
import type {
  Change,
  CommitResult,
  HistoryPage,
  HistoryQuery,
  LaneUnread,
  OutboxBounds,
  OutboxEntry,
  ReadMark,
  RetentionPolicy,
  SearchQuery,
  TurnScope,
} from "./storage-change.js";

export type {
  Change,
  ChannelExpectation,
  LaneUnread,
  ReadMark,
  CommitResult,
  HistoryPage,
  HistoryQuery,
  Lane,
  LaneFence,
  OutboxBounds,
  OutboxEntry,
  OutboxFrame,
  RetentionPolicy,
  SearchQuery,
  TurnScope,
} from "./storage-change.js";

/**
 * What a storage implementation writes: the required core and, as optional members, the
 * capabilities. Pass it to `defineStorage()` (or straight to `createGateway`, which does it).
 *
 * Rules for every member:
 * - **Owners.** Every method is scoped by `owner`: it never returns, changes or counts another
 *   owner's data, even when ids collide.
 * - **Copies.** What goes in and comes out is the caller's: mutating it later never changes what
 *   is stored.
 * - **Concurrency.** Methods may be called concurrently, also by several processes sharing the
 *   storage; {@link StorageImplementation.commit} calls for one owner apply in the order they were
 *   called. The gateway never reads, decides and writes an owner's data as separate steps and
 *   trusts the data not to change in between: what a decision depends on travels in the change
 *   ({@link Change.requireMessages}, {@link Change.requireChannels},
 *   {@link Change.expectChannels}) and the storage checks it in the same transaction that applies
 *   it. So each `commit` must be atomic towards every other
 *   `commit`, `adoptOwner`, `putDevice` and `putMedia` of the same owner, in any process: its
 *   checks see every change committed before it, and nothing commits between its checks and its
 *   writes. A storage in one process gets this by applying an owner's commits one at a time; a
 *   shared database by a transaction that first takes a lock on the owner (the PostgreSQL
 *   storage locks the owner's counter row) or runs serializable. The operations that need it:
 *   the default channel made on first use, `channel.set_default`, `channel.update` and
 *   `channel.delete` (all through `expectChannels`), a message sent into a channel being deleted
 *   (`requireChannels`), saving a running answer (`requireMessages`), one message per retried
 *   `client_msg_id` (`uniqueClientMsgId`) and `adoptOwner`.
 *   `describeStorageConformance` runs each of them concurrently.
 * - **Failure.** A method that fails rejects. The gateway answers the client `internal` and sends
 *   nothing that depends on it; a rejected `commit` left nothing of its change behind.
 * - **Durability.** When `commit`, `putDevice` or `putMedia` resolves, the write survives a crash
 *   of the process (for an on-disk storage: it is fsynced). The gateway sends no response and no
 *   `seq` frame before that (docs/PROTOCOL.md §5).
 * - **Bounds.** The gateway has validated and clamped every query; a storage needs no checks of
 *   its own beyond what its database requires.
 */
export interface StorageImplementation {
  /** Prepare the storage (open files, create schema). Called once by `createGateway().start()`. */
  open?(): Promise<void>;
  /** Flush and release everything. After it resolves, no write is pending. */
  close?(): Promise<void>;
  /**
   * Resolve once the database answered a trivial round trip (`SELECT 1`), reject when it cannot.
   * Readiness probes (docs/PROTOCOL.md §18.2) call it, bounded by their own timeout, so it must
   * reach the database itself, past any cache a read may answer from, and cost next to nothing.
   * Fallback: `outboxBounds` of the anonymous owner (a storage that caches it looks ready while
   * its database is gone).
   */
  ping?(): Promise<void>;

  // The required core: nothing else can stand in for these.

  /**
   * Apply one change atomically, in the order {@link Change} states, and resolve once it is
   * durable. All of it is applied or none of it: a crash or a rejection leaves nothing of the
   * change behind (no message without its outbox frame, no seq given out). Outbox frames get the
   * next seqs of the owner, from 1, by one, never reused, also after pruning and redaction.
   */
  commit(owner: Owner, change: Change): Promise<CommitResult>;
  /** One message by id, or undefined. */
  getMessage(owner: Owner, messageId: MessageId): Promise<StoredMessage | undefined>;
  /**
   * A page of one lane, oldest first. Order is by `(ts, message_id)`, so messages with the same
   * `ts` page without gaps or repeats. `thread_id: null` is the channel's flat lane, which does not
   * include its threads. Resolves `undefined` when `before` is not a message of that lane (the
   * gateway answers `not_found`).
   *
   * **Byte bound.** Walking from the newest, the page ends early once the messages read hold
   * `LIMITS.storagePageBytes` (1 MiB of their JSON) or more, with `has_more: true`; it always
   * holds at least one message. However long the messages, one call then costs at most that bound
   * plus one message (1 MiB at most, docs/PROTOCOL.md §8.3), never `limit` times it.
   */
  history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined>;
  /**
   * Every channel and thread of the owner, archived included, in any order. The fallbacks find
   * lanes through it, so a message whose channel is not stored is invisible to them.
   */
  listChannels(owner: Owner): Promise<Channel[]>;
  /**
   * Stored outbox frames with `seq > after`, in seq order, at most `limit`; redacted frames are
   * skipped (docs/PROTOCOL.md §5).
   *
   * **Byte bound.** The page ends early once the frames read hold `LIMITS.storagePageBytes` (1 MiB
   * of their payloads' JSON) or more; it holds at least one frame when any is left. A page shorter
   * than `limit` is therefore no sign of the end: callers page on from its last `seq` until a page
   * comes back empty.
   *
   * **`types`.** When given, only frames of these types are read, counted and returned: the
   * gateway finds an ask's frames this way (a `picker.select`), without reading every other
   * frame's payload. Let the database skip the others (a filter on the type column); a storage that
   * ignores `types` is still correct, as the gateway filters again, but a lookup then reads every
   * frame after the ask's position.
   */
  readOutbox(owner: Owner, after: Seq, limit: number, types?: readonly string[]): Promise<OutboxEntry[]>;
  /** The owner's outbox bounds (see {@link OutboxBounds}); `{ first: 1, last: 0 }` for an unknown owner. */
  outboxBounds(owner: Owner): Promise<OutboxBounds>;
  /** Every device of the owner, in any order. */
  listDevices(owner: Owner): Promise<Device[]>;
  /**
   * Insert or replace a device by `device_id`; durable when it resolves. Concurrent calls for one
   * device: the last applied wins whole (never a mix of two records). The gateway writes a device
   * one call at a time per process, each built from the record as stored then.
   */
  putDevice(owner: Owner, device: Device): Promise<void>;

  // Capabilities: optional members. Absent, the gateway uses the fallback each one names, or
  // refuses at createGateway() the options that cannot work without it.

  /**
   * **Capability `getChannel`.** One channel or thread, or undefined.
   * Fallback: {@link StorageImplementation.listChannels} and a linear find (cost: the owner's
   * channel count per call; the gateway calls it on most requests).
   */
  getChannel?(owner: Owner, chatId: ChatId): Promise<Channel | undefined>;
  /**
   * **Capability `getDevice`.** A device, or undefined.
   * Fallback: {@link StorageImplementation.listDevices} and a linear find (once per `hello`).
   */
  getDevice?(owner: Owner, deviceId: DeviceId): Promise<Device | undefined>;
  /**
   * **Capability `findByClientMsgId`.** The message a sender stored with this `client_msg_id` in
   * this chat (its flat lane or any of its threads), or undefined. Deleted messages are not found.
   * Fallback: pages through the history of every lane of the chat (cost: the chat's message count
   * per `message.send` that carries a `client_msg_id`, which clients send on every message).
   */
  findByClientMsgId?(owner: Owner, chatId: ChatId, clientMsgId: string): Promise<StoredMessage | undefined>;
  /**
   * **Capability `search`.** Full-text search of message text (docs/PROTOCOL.md §5). Query words
   * match word prefixes, case- and diacritic-insensitively; query syntax is plain words and never
   * fails. Hits rank by more query words matched, then more occurrences, then newest (`ts`); at
   * most `limit`; scope `chat` covers the channel's flat lane and threads, with `thread_id` that
   * thread only. Snippets come from `snippetAround`, at most 200 characters. The helpers in
   * `chat-gateway` (`searchTerms`, `matchText`, `compareMatches`) define all of this.
   * Fallback: pages through the history of every lane in scope and ranks with those helpers
   * (cost: every message in scope is read per search; fine for a few thousand messages per
   * owner, seconds at tens of thousands).
   */
  search?(owner: Owner, query: SearchQuery): Promise<SearchHit[]>;
  /**
   * **Capability `pruneOutbox`.** Drop the owner's oldest outbox frames beyond the policy: keep at
   * most `maxFrames` newest, and none older than `now - maxAgeMs`. `outboxBounds().last` never
   * moves; `first` moves up. Called every so many appends, never per write, so it may cost an
   * indexed range delete but must not scan the whole table.
   * Fallback: keeps everything (cost: the outbox grows without bound; a device's `sync` from an
   * old cursor replays every frame since instead of `sync.done` with `reset: true`).
   */
  pruneOutbox?(owner: Owner, policy: RetentionPolicy, now: number): Promise<void>;
  /**
   * **Capability `unfinishedMessages`.** Assistant messages whose `status` is `streaming`, across
   * all owners, or with `scope` only those of one owner's lane (returning more is allowed: the
   * gateway filters). Called at start and every `recoveryIntervalMs` to end turns that a crash left
   * open (they become `interrupted`), and with a scope whenever a process takes a lane, so an
   * answer a dead process left open is ended by the next process that runs the lane.
   * Fallback: none are found (cost: after a crash, an answer that was streaming stays `streaming`
   * in history; harmless for a storage that forgets everything when the process ends).
   */
  unfinishedMessages?(scope?: TurnScope): Promise<Array<{ owner: Owner; message: StoredMessage }>>;
  /**
   * **Capability `waitingTurns`: the durable turn queue (docs/PROTOCOL.md §4.2).** User messages
   * whose `waiting` mark is set, across all owners, or with `scope` only those of one owner's lane;
   * oldest first by `(ts, message_id)` within a lane. With this capability the gateway stores each
   * user message that starts a turn with `waiting: true`, and `commit` must honour
   * {@link Change.answered}: clear the mark of the listed messages that still exist, in the same
   * atomic step as the rest of the change (never re-inserting a deleted one). Together they make
   * "acknowledged means answered" hold across crashes: after a restart, or when another process
   * takes a lane, every message still waiting is answered exactly once, in lane order.
   * Cost to aim for: an index on the waiting rows (a partial index), since it is read once per turn.
   * Fallback: none are found and nothing is marked (cost: messages waiting behind a running turn
   * when the process dies are never answered).
   */
  waitingTurns?(scope?: TurnScope): Promise<Array<{ owner: Owner; message: StoredMessage }>>;
  /**
   * **Capability `media`, with `putMedia` and `deleteMedia`: all three or none.** Media
   * metadata, or undefined (also for another owner's id). With this capability, `commit` also
   * attaches media: a stored message marks each media it lists as held by it, a change that would
   * attach media another message holds applies nothing and resolves with
   * {@link CommitResult.mediaTaken}, and
   * deleting a message forgets the metadata of the media it held and lists them in
   * `orphanedMedia` (see {@link Change}).
   * Without it: no fallback. `createGateway` refuses a `mediaStore` (uploads need their metadata
   * kept); without a media store no message ever lists media.
   */
  getMedia?(owner: Owner, mediaId: MediaId): Promise<MediaRecord | undefined>;
  /** Capability `media`: insert or replace media metadata by `media_id`; durable when it resolves. */
  putMedia?(owner: Owner, media: MediaRecord): Promise<void>;
  /** Capability `media`: forget media metadata. Unknown ids are ignored. */
  deleteMedia?(owner: Owner, mediaIds: MediaId[]): Promise<void>;

  /**
   * **Capability `adoptOwner`.** Moves the history of owner `from` to owner `to` in one atomic
   * step: channels and threads, messages, the outbox with its seqs and `outboxBounds`, and media
   * metadata (whose `owner` becomes `to`). Device records, with their push targets, are never
   * moved: they stay with `from`, so a device registered by anyone while login was off is not
   * pushed the new owner's answers and asks. Afterwards `from` has no history, and `to` reads
   * exactly the history `from` read before. A crash leaves either all of it moved or none. A
   * storage that is also the gateway's `HookStore` or `ScheduleStore` moves the owner's hooks and
   * schedules in the same step, as they post into the channels that move.
   * Used to give the anonymous owner's data to the first user when login is turned on
   * (docs/PROTOCOL.md §10.4).
   *
   * Moves nothing and resolves {@link AdoptionRefused} when `to` already has any channel, message,
   * outbox frame (or seq given out), device or media: merging two owners could clash on ids and
   * seqs (checked atomically with the move; `defineStorage()` turns it into an `unsupported`
   * error). Moving from an owner that has no history (devices do not count) resolves all zeros,
   * so running it twice moves nothing the second time. `from === to` never reaches the
   * implementation: `defineStorage()` refuses it. Without it: no fallback; the call rejects
   * `unsupported`.
   */
  adoptOwner?(from: Owner, to: Owner): Promise<AdoptedCounts | AdoptionRefused>;

  /**
   * **Capability `readState`, with `unreadCounts`: both or none (docs/PROTOCOL.md §15).** The
   * owner's read watermarks, one per lane that has one. With this capability `commit` honours
   * {@link Change.read}: one watermark per lane, never a row per message, moved only forward.
   * Without it: no fallback; the gateway answers `read` with `unsupported`, `channel.list` carries
   * no `unread`, and a push waits for nothing but `pushAfterMs`.
   */
  readMarks?(owner: Owner): Promise<ReadMark[]>;
  /**
   * Capability `readState`: per lane with any, the number of assistant messages newer than its
   * watermark by `(ts, message_id)` (every assistant message of a lane without one), each at most
   * `cap`. Cost to aim for: an indexed count per lane that stops at `cap`, never a scan of history.
   */
  unreadCounts?(owner: Owner, cap: number): Promise<LaneUnread[]>;
  /**
   * Declares the capabilities that are guarantees rather than members:
   * - `uniqueClientMsgId: true`: `commit` rejects, applying nothing, a message whose
   *   `client_msg_id` another message of the same `chat_id` already has, atomically across every
   *   process sharing the storage (for example a unique index). Several processes sharing a
   *   storage through a bus other than the in-process `memoryBus()` need it: two processes may take
   *   a retried `message.send` at once, and only the storage can let exactly one win
   *   (docs/PROTOCOL.md §4.1). `createGateway` refuses such a `bus` without it.
   *
   * - `fencing: true`: `commit` honours {@link Change.takeLane} and {@link Change.fence}
   *   atomically across every process sharing the storage (a per-lane counter kept with the
   *   data, raised and checked in the same transaction as the change). With it a process that
   *   lost a lane's lease writes nothing more there. Gateways sharing lanes through a `laneLock`
   *   need it: `createGateway` refuses a `laneLock` without it.
   *
   * A member capability is declared by supplying the member; `false` here marks a supplied member
   * as the core's fallback (what a wrapper around a {@link Storage} passes on).
   */
  capabilities?: Partial<StorageCapabilities>;
  /** Capability `actionTokens` (docs/PROTOCOL.md §21), its own contract; none: pushes get no action buttons. */
  actionTokens?: ActionTokenStore;
  /** Capability `duePushes` (docs/PROTOCOL.md §21.6), its own contract; none: a waiting push lives in memory only. */
  duePushes?: DuePushStore;
}

/** What {@link StorageImplementation.adoptOwner} moved: counts of each kind of record. */
export interface AdoptedCounts {
  channels: number;
  messages: number;
  /** Outbox frames still stored (pruned and redacted ones are not counted). */
  outbox: number;
  media: number;
}

/**
 * What {@link StorageImplementation.adoptOwner} resolves, having moved nothing, when the owner it
 * would move to already has data of its own.
 */
export interface AdoptionRefused {
  refused: "target_has_data";
}

/**
 * Which capabilities a {@link Storage} has natively (`true`) and which the gateway's fallback
 * stands in for (`false`). Each key is documented on the {@link StorageImplementation} member
 * of the same name (`media` covers `getMedia`, `putMedia`, `deleteMedia`; `readState` covers
 * `readMarks` and `unreadCounts`).
 */
export interface StorageCapabilities {
  getChannel: boolean;
  getDevice: boolean;
  findByClientMsgId: boolean;
  search: boolean;
  pruneOutbox: boolean;
  unfinishedMessages: boolean;
  waitingTurns: boolean;
  media: boolean;
  adoptOwner: boolean;
  readState: boolean;
  uniqueClientMsgId: boolean;
  fencing: boolean;
}

/**
 * A storage as the gateway calls it: a {@link StorageImplementation} normalised by
 * `defineStorage()`, with every member present (fallbacks filled in) and its capabilities
 * listed. Each member keeps the guarantee documented on {@link StorageImplementation}.
 * Pass it as `GatewayOptions.storage`, to `redisBus({ storage })` and to the kit.
 */
export interface Storage
  extends Required<Omit<StorageImplementation, "capabilities" | "adoptOwner" | "actionTokens" | "duePushes">> {
  readonly capabilities: Readonly<StorageCapabilities>;
  readonly actionTokens?: ActionTokenStore;
  readonly duePushes?: DuePushStore;
  /**
   * {@link StorageImplementation.adoptOwner}, refusing with a `GatewayError` of code `unsupported`
   * (nothing moved) what the implementation refuses, and `from === to`.
   */
  adoptOwner(from: Owner, to: Owner): Promise<AdoptedCounts>;
}
