/**
 * The values that cross the `Storage` boundary: a {@link Change} and its result, lanes,
 * history and search queries, outbox entries and retention.
 * @module
 */
import type { ChatId, MediaId, MessageId, Owner, Seq } from "../protocol/ids.js";
import type { Channel, StoredMessage } from "./records.js";

/** A frame as kept in the outbox: the gateway → client frame without its `seq`. */
export interface OutboxFrame {
  type: string;
  payload: Record<string, unknown>;
  /**
   * The redaction key of the frame, which the core computes (`defineStorage()` sets it on every
   * frame of {@link Change.outbox} before the implementation sees it): `m:` and the `message_id`
   * for a frame that shows one message, `c:` and the `chat_id` for a frame about a channel or a
   * thread, `null` for a frame kept whatever is deleted. Store it with the frame; a deletion
   * redacts by it (see {@link Change}). Never returned by `readOutbox`.
   */
  redactKey?: string | null;
}

/** A stored outbox frame with its `seq` and the time it was stored. */
export interface OutboxEntry extends Omit<OutboxFrame, "redactKey"> {
  seq: Seq;
  /** Epoch milliseconds. */
  ts: number;
}

/**
 * A channel as a {@link Change} expects to find it stored (see {@link Change.expectChannels}).
 */
export interface ChannelExpectation {
  chat_id: ChatId;
  /** The record as the gateway read it, or `null` for "not stored". */
  channel: Channel | null;
}

/**
 * One atomic change of an owner's data. Everything in it is applied, or nothing is: a crash or an
 * error never leaves half of a change behind. Order of application: the checks of
 * `requireMessages`, `requireStreaming`, `requireChannels`, `expectChannels` and `fence`, the
 * `takeLane` raise, channel upserts, message upserts, message deletions, channel deletions (with
 * the redaction of what both deleted), outbox appends.
 *
 * Media attachment (storages with the `media` capability; see `Storage.getMedia`): a
 * message upsert attaches each media it lists to that message (the media's metadata gets
 * `message_id`). Media is held by another message when its metadata has a `message_id` that is
 * set and differs (metadata with none, an upload not sent yet, is held by no one). A change that
 * would attach media another message holds, or that lists one media in two of its messages,
 * applies nothing and resolves with {@link CommitResult.mediaTaken}, checked atomically with the
 * change; `defineStorage()` turns that into the `unsupported` error the client gets. So media is
 * never shared, and deleting a message never takes media from another one.
 *
 * Unique `client_msg_id` (storages that declare `uniqueClientMsgId`): a message upsert whose
 * `client_msg_id` another message of the same `chat_id` holds rejects the whole change.
 *
 * Redaction: deleting messages or channels redacts, in the same commit, every stored outbox frame
 * that shows them: the frames whose {@link OutboxFrame.redactKey} is `m:` and the id of a message
 * the change deleted (listed in `deleteMessages` or deleted with its channel), or `c:` and the id
 * of a channel it deleted. A redacted frame keeps its `seq` (so
 * seqs are never reused and `Storage.outboxBounds` does not move) but is never returned by
 * `Storage.readOutbox` again: no replay hands out deleted content, and a replay from an older
 * cursor gives only the `message.deleted` or `channel.deleted` frame (which keeps ids only).
 */
export interface Change {
  /** Channels to insert or replace (by `chat_id`). */
  channels?: Channel[];
  /**
   * Channels to delete, with every message whose `chat_id` or `thread_id` is one of them, those
   * messages' media metadata (unless another message holds it), and the outbox frames showing
   * any of them (redacted, see {@link Change}).
   * The gateway lists a channel's threads explicitly; storage does not cascade by parent.
   */
  deleteChannels?: ChatId[];
  /** Messages to insert or replace (by `message_id`). */
  messages?: StoredMessage[];
  /**
   * Messages to delete, with the metadata of their media (unless another message holds it) and
   * the outbox frames showing them (redacted, see {@link Change}). Unknown ids are ignored.
   */
  deleteMessages?: MessageId[];
  /** Frames to append to the owner's outbox, in order; each gets the next `seq`. */
  outbox?: OutboxFrame[];
  /**
   * Apply the change only if every one of these messages exists, checked atomically with the
   * change; otherwise apply nothing and resolve with `skipped: true`. The gateway saves a running
   * answer this way, so a save racing a delete (from any process) never brings the message back.
   */
  requireMessages?: MessageId[];
  /**
   * User messages whose turn ended with this change (their answer's final frame is in it): clear
   * their `waiting` mark where it is set, atomically with the rest of the change. A message that is
   * gone (deleted) stays gone: this never inserts. Storages without the `waitingTurns` capability
   * never see a `waiting` message and may ignore it.
   */
  answered?: MessageId[];
  /**
   * Apply the change only if every one of these channels or threads exists, checked atomically
   * with the change; otherwise apply nothing and resolve with `skipped: true`. A message sent into
   * a channel that a concurrent `channel.delete` removes (from any process) is refused this way,
   * instead of being stored in a channel that is gone.
   */
  requireChannels?: ChatId[];
  /**
   * Apply the change only if each of these channels is stored exactly as given (`null`: not
   * stored at all), checked atomically with the change against what any process committed;
   * otherwise apply nothing and resolve with `skipped: true`. "Exactly" is `sameRecord` from
   * `chat-gateway`: the same JSON value, key order and `undefined` members aside
   * (`expectedChannelsHeld` does the whole check).
   *
   * This is how the gateway keeps its channel invariants without locks of its own (one default
   * channel per owner, docs/PROTOCOL.md §3): it reads the channels a decision depends on, builds
   * the change and its frames, and commits them expecting those channels unchanged; when another
   * write came first, it reads again and decides again. The default channel made on first use
   * expects `default` absent, `channel.set_default` expects the target and the current default as
   * read, `channel.update` and `channel.delete` expect the channel as read, and a new thread
   * expects its parent as read.
   */
  expectChannels?: ChannelExpectation[];
  /**
   * A lane's read watermark (storages with the `readState` capability; docs/PROTOCOL.md §15):
   * apply the change only if this mark is newer than the lane's stored watermark by
   * `(ts, message_id)`, checked and stored atomically with the change; otherwise apply nothing
   * and resolve with `skipped: true`. So a watermark never moves back, however reads race.
   */
  read?: ReadMark;
  /**
   * Apply the change only if each of these messages is stored with `status: "streaming"`, checked
   * atomically with the change; otherwise apply nothing and resolve with `skipped: true`. The
   * gateway stores an answer's final frame (and every checkpoint while it runs) this way, so an
   * answer gets exactly one final however many processes try to end it, and an ended answer is
   * never turned back to `streaming` (docs/PROTOCOL.md §4.2). Checked by every storage.
   */
  requireStreaming?: MessageId[];
  /**
   * Take a lane (storages with the `fencing` capability; docs/PROTOCOL.md §4.2): raise the lane's
   * fencing token by one, atomically with the rest of the change, and resolve the new token in
   * {@link CommitResult.fence}. Tokens of a lane only grow, from 1, and survive restarts of every
   * process and of the lane lock's server: they are kept with the data, not in the lock.
   */
  takeLane?: Lane;
  /**
   * The lane token the writer holds (storages with the `fencing` capability): apply the change
   * only if the lane's token is still `token`, checked atomically with the change (so a lane
   * taken meanwhile, by any process, refuses it); otherwise apply nothing and resolve with
   * `skipped: true` and `fenced: true`. Every write of a turn carries it, so a process that lost
   * its lane (its lease expired while it was paused, say) writes nothing more there.
   */
  fence?: LaneFence;
}

/** A lane and the fencing token its holder got when it took it (see {@link Change.fence}). */
export interface LaneFence extends Lane {
  token: number;
}

/** One lane's read watermark: the newest message a device of the owner has shown (docs/PROTOCOL.md §15). */
export interface ReadMark extends Lane {
  message_id: MessageId;
  /** The `ts` of that message: watermarks order by `(ts, message_id)`. */
  ts: number;
}

/** How many assistant messages of one lane are newer than its watermark, at most the cap asked for. */
export interface LaneUnread extends Lane {
  unread: number;
}

/** The result of `Storage.commit`. */
export interface CommitResult {
  /** The `seq` given to each appended outbox frame, in the order they were given. */
  seqs: Seq[];
  /**
   * Media ids that messages this change deleted held (media that another message holds is not
   * listed). Their metadata is gone with the change; the gateway removes their bytes from the
   * media store. Always `[]` from a storage without the `media` capability.
   */
  orphanedMedia: MediaId[];
  /**
   * True when nothing was applied because a message of {@link Change.requireMessages} or a
   * message of {@link Change.requireStreaming} (gone or no longer streaming), the lane's token of
   * {@link Change.fence} moved on, a channel of {@link Change.requireChannels} is gone, a channel
   * of {@link Change.expectChannels} is not stored as expected, or {@link Change.read} is not newer than the stored watermark.
   */
  skipped?: boolean;
  /**
   * Set, with nothing applied, to a media id the change would attach to a message while another
   * message holds it (see {@link Change}). Only an implementation resolves with it:
   * `defineStorage()` rejects with `unsupported` instead, so `Storage.commit` never does.
   */
  mediaTaken?: MediaId;
  /** With {@link Change.takeLane}: the lane's new fencing token. */
  fence?: number;
  /** Set, with `skipped: true` and nothing applied, when {@link Change.fence} is no longer the lane's token. */
  fenced?: boolean;
}

/** A lane: a channel's flat lane (`thread_id` null) or one of its threads. */
export interface Lane {
  chat_id: ChatId;
  thread_id: ChatId | null;
}

/** Where to look for unfinished turns: one owner, or one lane of one owner (with `chat_id`). */
export interface TurnScope {
  owner: Owner;
  /** With `thread_id` (null for the flat lane): only that lane. Absent: every lane of the owner. */
  chat_id?: ChatId;
  thread_id?: ChatId | null;
}

/** A page request for `Storage.history`. */
export interface HistoryQuery extends Lane {
  /** Return messages strictly older than this one; absent for the newest page. */
  before?: MessageId;
  /** Page size, already clamped by the gateway (1 to 200). */
  limit: number;
}

/** A page of history, oldest first. */
export interface HistoryPage {
  messages: StoredMessage[];
  /** True when older messages exist in the lane. */
  has_more: boolean;
}

/** A search request, already validated and clamped by the gateway. */
export interface SearchQuery {
  /** Non-blank user text. Implementations treat it as words (with prefix matching), never as syntax that can fail. */
  query: string;
  /** `all`: every message of the owner. `chat`: one channel (threads included) or, with `thread_id`, one thread. */
  scope: "all" | "chat";
  chat_id?: ChatId;
  thread_id?: ChatId;
  limit: number;
}

/** What the outbox holds for an owner. */
export interface OutboxBounds {
  /** Lowest `seq` still kept; `last + 1` when nothing is kept. */
  first: Seq;
  /** Highest `seq` ever given (0 before the first); never goes down, also after pruning. */
  last: Seq;
}

/** How much outbox to keep per owner (docs/PROTOCOL.md §5). */
export interface RetentionPolicy {
  /** Keep at most this many newest frames. */
  maxFrames: number;
  /** Drop frames older than this many milliseconds. */
  maxAgeMs: number;
}
