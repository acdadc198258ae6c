/**
 * The owner's outbox as the core writes it: a change committed with its stored frames, then those
 * frames published in `seq` order to every device of the owner (docs/PROTOCOL.md §5), and live
 * frames that are published without being stored.
 * @module
 */
import type { Bus, OutgoingFrame } from "../contracts/bus.js";
import type { MediaStore } from "../contracts/media-store.js";
import type { Change, RetentionPolicy, Storage } from "../contracts/storage.js";
import type { ConnectionId, Owner, RequestId } from "../protocol/ids.js";
import type { Logger } from "../contracts/logger.js";
import type { ServerFrame, StoredFrame } from "../protocol/protocol.js";
import type { Clock, ClockTimer } from "../support/clock.js";

/** Outbox appends between two prunes: pruning is an indexed range delete, kept off the per-write path. */
const PRUNE_EVERY = 100;

/**
 * The longest time between two scheduled prunes (milliseconds): an owner who stores nothing more
 * still loses frames past the age limit (docs/PROTOCOL.md §5).
 */
const PRUNE_SCHEDULE_MS = 3_600_000;

/** Time between scheduled prunes: an hour, or the age limit when that is shorter (not below 100 ms). */
function pruneScheduleMs(retention: RetentionPolicy): number {
  const age = retention.maxAgeMs;
  return Number.isFinite(age) ? Math.min(PRUNE_SCHEDULE_MS, Math.max(100, age)) : PRUNE_SCHEDULE_MS;
}

/** The connection that asked for a change, answered with one of its frames in publish order. */
export interface Respondent {
  readonly session: {
    readonly id: ConnectionId;
    respond(frame: OutgoingFrame, requestId: RequestId | undefined): void;
  };
  readonly requestId: RequestId | undefined;
  /** Which of the change's frames answers the request (default the first). */
  readonly frameIndex?: number;
}

/** Commits a change with its frames and publishes them in order; resolves with them as published. */
export type StoreChange = (
  owner: Owner,
  change: Change,
  frames?: StoredFrame[],
  respondTo?: Respondent,
) => Promise<OutgoingFrame[]>;

/** Publishes a frame that is not stored to every device of the owner (but `except`). */
export type PublishLive = (owner: Owner, frame: ServerFrame, except?: ConnectionId) => void;

/** What the outbox writes through. */
export interface OutboxParts {
  storage: Storage;
  bus: Bus;
  retention: RetentionPolicy;
  mediaStore: MediaStore | undefined;
  now(): number;
  /** The clock the pruning schedule runs on. */
  clock: Clock;
  log: Logger;
  /** The owners with a connection in this process, pruned on the schedule too. */
  connectedOwners(): Iterable<Owner>;
}

/** The ordered publisher of one gateway process. */
export class Outbox {
  readonly #parts: OutboxParts;
  /** Per owner: the tail of the publish chain, so stored frames go out in `seq` order. */
  readonly #publishTail = new Map<Owner, Promise<void>>();
  /** Per owner: appends since the last prune. Its keys are the owners the schedule prunes. */
  readonly #appendsSincePrune = new Map<Owner, number>();
  #schedule: ClockTimer | undefined;

  constructor(parts: OutboxParts) {
    this.#parts = parts;
  }

  /**
   * Commit a change with outbox frames atomically, then publish the frames in `seq` order to every
   * device of the owner. The requester, if given, gets its response (with the request id) in that
   * same order instead of the broadcast copy. Resolves with the frames as published: none when
   * storage skipped the change (a message in `change.requireMessages` is gone, or a channel of
   * `change.expectChannels` is not stored as expected).
   */
  readonly store: StoreChange = async (owner, change, frames = [], respondTo) => {
    const { storage } = this.#parts;
    const committing = storage.commit(owner, { ...change, outbox: frames });
    // Handled below, after earlier publishes; without this an early rejection counts as unhandled.
    committing.catch(() => undefined);
    const previous = this.#publishTail.get(owner) ?? Promise.resolve();
    let published: OutgoingFrame[] = [];
    // Commits start at once (storage batches them); only publishing waits for earlier commits.
    const step = previous.then(async () => {
      const result = await committing;
      if (result.skipped) return;
      published = frames.map((frame, i) => ({ type: frame.type, payload: frame.payload, seq: result.seqs[i] }));
      this.#publish(owner, published, respondTo);
      this.#dropOrphans(owner, result.orphanedMedia);
      this.#countAppends(owner, frames.length);
    });
    const tail = step.catch(() => undefined);
    this.#publishTail.set(owner, tail);
    void tail.then(() => {
      if (this.#publishTail.get(owner) === tail) this.#publishTail.delete(owner);
    });
    await step;
    return published;
  };

  readonly live: PublishLive = (owner, frame, except) => {
    this.#parts.bus.publish({ owner, frame, except });
  };

  #publish(owner: Owner, frames: OutgoingFrame[], respondTo: Respondent | undefined): void {
    const answered = respondTo ? (respondTo.frameIndex ?? 0) : -1;
    frames.forEach((frame, i) => {
      if (i === answered && respondTo) {
        respondTo.session.respond(frame, respondTo.requestId);
        this.#parts.bus.publish({ owner, frame, except: respondTo.session.id });
      } else {
        this.#parts.bus.publish({ owner, frame });
      }
    });
  }

  #dropOrphans(owner: Owner, mediaIds: string[]): void {
    const { mediaStore, log } = this.#parts;
    if (mediaIds.length === 0 || !mediaStore) return;
    mediaStore.delete(owner, mediaIds).catch((error) => log.warn("media delete failed", error));
  }

  /**
   * Until {@link stopPruning}, prunes on a schedule the owners this process stored frames for and
   * those connected to it, so the age limit holds for an owner who stores nothing more.
   */
  pruneOnSchedule(): void {
    if (this.#schedule) return;
    this.#schedule = this.#parts.clock.setInterval(() => {
      for (const owner of new Set([...this.#appendsSincePrune.keys(), ...this.#parts.connectedOwners()]))
        this.#prune(owner);
    }, pruneScheduleMs(this.#parts.retention));
  }

  stopPruning(): void {
    this.#parts.clock.clearInterval(this.#schedule);
    this.#schedule = undefined;
  }

  #countAppends(owner: Owner, count: number): void {
    if (count === 0) return;
    const total = (this.#appendsSincePrune.get(owner) ?? 0) + count;
    if (total < PRUNE_EVERY) {
      this.#appendsSincePrune.set(owner, total);
      return;
    }
    this.#prune(owner);
  }

  #prune(owner: Owner): void {
    this.#appendsSincePrune.set(owner, 0);
    const { storage, retention, now, log } = this.#parts;
    storage.pruneOutbox(owner, retention, now()).catch((error) => log.warn("outbox prune failed", error));
  }
}
