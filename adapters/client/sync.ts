/**
 * The sync cursor and replay: the newest `seq` seen, persisted in a {@link CursorStore}, and the
 * window of seen `seq`s that drops a stored frame the sync after a reconnect delivers again.
 * @module
 */
import type { CursorStore } from "./cursor.js";
import type { SyncDonePayload } from "./frames.js";

/** How many recent `seq`s are remembered to drop replays; older ones are below the sync base anyway. */
const SEEN_WINDOW = 4096;

/** One client's cursor, across its reconnects. */
export class Replay {
  readonly #store: CursorStore;
  #cursor: number | undefined;
  /** Frames at or below this `seq` were delivered before the current sync; -1 when no sync runs. */
  #syncBase = -1;
  #seen = new Set<number>();
  #seenOrder: number[] = [];

  /** The cursor is read from `store` at every sync and written on every new `seq`. */
  constructor(store: CursorStore) {
    this.#store = store;
  }

  /** The newest `seq` seen. */
  get cursor(): number | undefined {
    return this.#cursor;
  }

  /** The cursor the store kept, or undefined when it has none or fails. */
  async stored(): Promise<number | undefined> {
    let stored: number | null | undefined;
    try {
      stored = await this.#store.get();
    } catch {
      stored = undefined;
    }
    return typeof stored === "number" && Number.isInteger(stored) && stored >= 0 ? stored : undefined;
  }

  /** A sync starts: resolves the cursor to sync from (the stored one, else the gateway's). */
  begin(stored: number | undefined, gatewayCursor: number): number {
    const from = stored ?? gatewayCursor;
    if (this.#cursor === undefined || this.#cursor < from) this.#cursor = from;
    this.#syncBase = Math.max(from, this.#cursor);
    return this.#syncBase;
  }

  /** The sync ended; true when the gateway reset the cursor (the frames after it are gone). */
  finish(done: SyncDonePayload): boolean {
    if (done.reset) {
      this.#cursor = done.cursor;
      this.#seen.clear();
      this.#seenOrder = [];
      this.#save();
      return true;
    }
    if (done.cursor > (this.#cursor ?? -1)) {
      this.#cursor = done.cursor;
      this.#save();
    }
    return false;
  }

  /** The socket dropped: the next sync sets a new base. */
  invalidate(): void {
    this.#syncBase = -1;
  }

  /** Record a stored frame's `seq`; true when it was delivered already (a replay to drop). */
  isDuplicate(seq: number): boolean {
    if (seq <= this.#syncBase || this.#seen.has(seq)) return true;
    this.#seen.add(seq);
    this.#seenOrder.push(seq);
    if (this.#seenOrder.length > SEEN_WINDOW) this.#seen.delete(this.#seenOrder.shift()!);
    if (this.#cursor === undefined || seq > this.#cursor) {
      this.#cursor = seq;
      this.#save();
    }
    return false;
  }

  #save(): void {
    const cursor = this.#cursor;
    if (cursor === undefined) return;
    try {
      Promise.resolve(this.#store.set(cursor)).catch(() => undefined);
    } catch {
      // A failing store must not break delivery; the next frame tries again.
    }
  }
}
