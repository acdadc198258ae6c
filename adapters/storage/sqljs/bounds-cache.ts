/**
 * The outbox bounds of owners read recently, so that asking again does not go to the database
 * process. A device asks for its owner's bounds at `hello` (docs/PROTOCOL.md §2.1) and again at
 * `sync` (docs/PROTOCOL.md §5), as does every other device of the owner, and after a restart every
 * device of a fleet does both at once: a third of the requests of a reconnecting device.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { OutboxBounds } from "chat-gateway/storage";
import type { JournalOp } from "./apply.js";

/**
 * Owners whose bounds are kept: eight times the hellos a gateway lets in at once by default
 * (`maxHellosInFlight`, 128), enough for a device that says hello and then syncs, and for the other
 * devices of its owner that arrive meanwhile. Past it the oldest is forgotten, so the cache holds
 * about 50 KiB whatever the number of owners.
 */
export const BOUNDS_KEPT = 1024;

/** A read of an owner's bounds sent to the database and not answered yet. */
interface Reading {
  readonly bounds: Promise<OutboxBounds>;
  /**
   * Its answer may not hold every write that may move the bounds and was sent before a later
   * caller asks: one was in flight when it was sent, or one was sent after it. Nobody else gets it.
   */
  stale: boolean;
}

/** Stands for every owner among the writes in flight: an op this cache knows nothing of. */
const EVERY_OWNER = "\u0000every owner";

/**
 * Sound because the folder's lock lets no other process write the database, and every write
 * passes {@link BoundsCache.writing} before it is sent and tells it when it has settled. An answer
 * is kept, or shared with another caller, only when the read was sent with no write in flight that
 * may move the owner's bounds, and no such write was sent before it came back: the writes before
 * it had settled (applied and on disk, or failed and undone) so it holds them, and there was no
 * other. It is dropped as soon as such a write is sent. Reads sent while one is in flight go to
 * the database each, as without this cache: a write may wait (while a snapshot is copied in
 * place) where a read does not.
 */
export class BoundsCache {
  /** Reads an owner's bounds from the database. */
  readonly #read: (owner: Owner) => Promise<OutboxBounds>;
  readonly #known = new Map<Owner, OutboxBounds>();
  readonly #reading = new Map<Owner, Reading>();
  /** Writes sent and not settled that may move the owner's bounds, by owner (or {@link EVERY_OWNER}). */
  readonly #moving = new Map<Owner, number>();

  constructor(read: (owner: Owner) => Promise<OutboxBounds>) {
    this.#read = read;
  }

  /** The owner's bounds: kept, or shared with a read on its way, or read from the database. */
  get(owner: Owner): Promise<OutboxBounds> {
    const known = this.#known.get(owner);
    if (known) return Promise.resolve({ ...known });
    const pending = this.#reading.get(owner);
    if (pending && !pending.stale) return pending.bounds.then((bounds) => ({ ...bounds }));
    const reading: Reading = {
      bounds: this.#read(owner),
      stale: this.#moving.has(owner) || this.#moving.has(EVERY_OWNER),
    };
    this.#reading.set(owner, reading);
    const done = () => {
      if (this.#reading.get(owner) === reading) this.#reading.delete(owner);
    };
    reading.bounds.then((bounds) => {
      done();
      if (!reading.stale) this.#keep(owner, bounds);
    }, done);
    return reading.bounds.then((bounds) => ({ ...bounds }));
  }

  /**
   * A write about to be sent: the bounds of the owners whose outbox it may change are read afresh
   * until it settles. Returns what to call once it has, or undefined for a write that moves none.
   */
  writing(op: JournalOp): (() => void) | undefined {
    const owners = movedBy(op);
    if (owners.length === 0) return undefined;
    for (const owner of owners) {
      this.#moving.set(owner, (this.#moving.get(owner) ?? 0) + 1);
      if (owner === EVERY_OWNER) this.#forgetAll();
      else this.#forget(owner);
    }
    return () => {
      for (const owner of owners) {
        const left = this.#moving.get(owner)! - 1;
        if (left === 0) this.#moving.delete(owner);
        else this.#moving.set(owner, left);
      }
    };
  }

  #forgetAll(): void {
    this.#known.clear();
    for (const reading of this.#reading.values()) reading.stale = true;
  }

  #forget(owner: Owner): void {
    this.#known.delete(owner);
    const reading = this.#reading.get(owner);
    if (reading) reading.stale = true;
  }

  /** Only the one read of the owner that is not stale keeps an answer, so the owner is not kept yet. */
  #keep(owner: Owner, bounds: OutboxBounds): void {
    if (this.#known.size >= BOUNDS_KEPT) this.#known.delete(this.#known.keys().next().value as Owner);
    this.#known.set(owner, { first: bounds.first, last: bounds.last });
  }
}

/** The owners whose outbox bounds `op` may change. */
function movedBy(op: JournalOp): readonly Owner[] {
  switch (op.k) {
    case "commit":
      return op.c.outbox?.length ? [op.o] : [];
    case "prune":
      return [op.o];
    case "adopt":
      return [op.o, op.to];
    // Devices, media, hooks and schedules (hooks.ts, schedules.ts) have rows of their own.
    case "device":
    case "media":
    case "unmedia":
    case "hook":
    case "unhook":
    case "claim":
    case "settle":
    case "sched":
    case "unsched":
    case "slot":
    case "run":
    case "atok":
    case "atset":
    case "atgc":
    case "dpadd":
    case "dpclaim":
    case "dpdrop":
      return [];
    default:
      // Nothing is assumed of an op added later.
      return [EVERY_OWNER];
  }
}
