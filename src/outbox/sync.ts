/**
 * `sync`: the stored frames after a device's cursor, replayed from the outbox in pages while
 * live stored frames are held back, then `sync.done` with the new cursor (docs/PROTOCOL.md §5).
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { Storage } from "../contracts/storage.js";
import { GatewayError } from "../protocol/errors.js";
import type { Owner, RequestId, Seq } from "../protocol/ids.js";
import type { ServerFrame } from "../protocol/protocol.js";

/** Outbox entries read per page; the socket must drain between pages. */
const SYNC_PAGE = 500;

/** The connection a sync replays to. */
export interface SyncTarget {
  /** Runs the replay while live stored frames are held back (`run` resolves with the last seq it covered). */
  replay(run: () => Promise<Seq>): Promise<void>;
  /** Sends a replayed stored frame, unless it already went out live. */
  deliverReplay(frame: OutgoingFrame): void;
  /** Waits for the socket to drain; false once the connection ended. */
  drained(): Promise<boolean>;
  send(frame: ServerFrame, requestId?: RequestId): void;
}

/** Handle `sync {cursor}` for the owner's connection `target`. */
export async function sync(
  storage: Storage,
  owner: Owner,
  cursor: Seq,
  requestId: RequestId | undefined,
  target: SyncTarget,
): Promise<void> {
  if (cursor < 0) throw new GatewayError("unsupported", `field "cursor": use an integer of at least 0`);
  await target.replay(async () => {
    const bounds = await storage.outboxBounds(owner);
    // A cursor from before what is kept, or one this gateway never gave: the client refetches history.
    const reset = cursor > bounds.last || (cursor < bounds.last && cursor + 1 < bounds.first);
    if (!reset) await replayRange(storage, owner, cursor, bounds.last, target);
    target.send(
      { type: "sync.done", payload: reset ? { cursor: bounds.last, reset: true } : { cursor: bounds.last } },
      requestId,
    );
    return bounds.last;
  });
}

/**
 * Replays the stored frames in (`after`, `last`], a page at a time, until the connection ends. The
 * socket drains before each frame, not each page: a page of long messages written at once could
 * pass the slow-consumer limit (docs/PROTOCOL.md §2.4) of a device that reads as fast as it can.
 */
async function replayRange(storage: Storage, owner: Owner, after: Seq, last: Seq, target: SyncTarget): Promise<void> {
  while (after < last) {
    const entries = await storage.readOutbox(owner, after, SYNC_PAGE);
    if (entries.length === 0) return;
    for (const entry of entries) {
      if (entry.seq > last) return;
      if (!(await target.drained())) return;
      target.deliverReplay({ type: entry.type, payload: entry.payload, seq: entry.seq });
      after = entry.seq;
    }
  }
}
