/**
 * Catch-up after a bus's link to other processes was down: the stored frames the other processes
 * published meanwhile are read back from the outbox, once each, for the owners with a subscriber
 * in this process. Any `Bus` that links processes can use it: it reports what it delivers
 * and when its link goes down and comes back; the outbox is the record of what was missed.
 * @module
 */
import type { BusMessage } from "../contracts/bus.js";
import type { Storage } from "../contracts/storage.js";
import type { Owner, Seq } from "../protocol/ids.js";

/** Frames read back per owner at most. */
const MAX_REPLAY = 10_000;

/** Per owner: the seq the gap starts after, and what was delivered since (not to deliver twice). */
type Gaps = Map<Owner, { after: Seq; delivered: Set<Seq> }>;

/** What the catch-up needs from its bus. */
export interface OutboxCatchUpHooks {
  /** The gateway's storage; without it nothing is read back (devices catch up on their next `sync`). */
  storage: Storage | undefined;
  /** Owners with a subscriber in this process. */
  owners(): Owner[];
  hasSubscriber(owner: Owner): boolean;
  /** Delivers a frame read back to this process's subscribers. */
  deliver(message: BusMessage): void;
  /** A frame was read back and delivered. */
  recovered(): void;
  /** True once the bus is closed. */
  closed(): boolean;
  warn(message: string): void;
}

/** Tracks what a process received over its bus, to read back what it missed. */
export interface OutboxCatchUp {
  /** A stored frame was delivered to a subscriber here. */
  delivered(owner: Owner, seq: Seq): void;
  /** The owner's last subscriber here left. */
  forget(owner: Owner): void;
  /** True while the link is down. */
  down(): boolean;
  /** While the link is down, an owner's first subscriber here: its catch-up starts at the outbox's end now. */
  noteGap(owner: Owner): Promise<void>;
  /** The link went down: remember where each owner with a subscriber here was. */
  linkDown(): void;
  /**
   * The link is back. Undefined when there was no outage (or the bus is closed); otherwise the
   * read-back, to run once the bus's subscriptions are active again, so whatever it misses arrives live.
   */
  linkUp(): (() => Promise<void>) | undefined;
}

/** Creates the catch-up of one bus. */
export function outboxCatchUp(hooks: OutboxCatchUpHooks): OutboxCatchUp {
  /** Highest `seq` delivered here per owner with a subscriber; where a read-back starts. */
  const seen = new Map<Owner, Seq>();
  let gaps: Gaps | undefined;
  /** Gaps being read back; frames delivered meanwhile are recorded so none is delivered twice. */
  const replaying = new Set<Gaps>();

  async function noteGap(owner: Owner): Promise<void> {
    const storage = hooks.storage;
    if (!storage || !gaps || gaps.has(owner)) return;
    const { last } = await storage.outboxBounds(owner).catch(() => ({ last: undefined }));
    if (last !== undefined && gaps && !gaps.has(owner)) gaps.set(owner, { after: last, delivered: new Set<Seq>() });
  }

  /** Reads back one owner's gap, page by page (a page ends early at the storage's byte bound). */
  async function readGap(storage: Storage, owner: Owner, gap: { after: Seq; delivered: Set<Seq> }): Promise<void> {
    let after = gap.after;
    for (let read = 0; read < MAX_REPLAY; ) {
      const entries = await storage.readOutbox(owner, after, MAX_REPLAY - read);
      if (entries.length === 0) return;
      for (const entry of entries) {
        after = entry.seq;
        if (gap.delivered.has(entry.seq) || !hooks.hasSubscriber(owner)) continue;
        hooks.recovered();
        hooks.deliver({ owner, frame: { type: entry.type, payload: entry.payload, seq: entry.seq } });
      }
      read += entries.length;
    }
  }

  function readBack(missed: Gaps, storage: Storage): Promise<unknown> {
    const reads = [...missed].map(([owner, gap]) =>
      readGap(storage, owner, gap).catch((error: Error) =>
        hooks.warn(`reading back the frames missed by ${owner} failed: ${error.message}`),
      ),
    );
    return Promise.all(reads);
  }

  return {
    delivered(owner, seq) {
      if (seq > (seen.get(owner) ?? 0)) seen.set(owner, seq);
      gaps?.get(owner)?.delivered.add(seq);
      for (const gap of replaying) gap.get(owner)?.delivered.add(seq);
    },
    forget(owner) {
      seen.delete(owner);
    },
    down: () => gaps !== undefined,
    noteGap,
    linkDown() {
      if (hooks.closed() || gaps) return;
      gaps = new Map(
        [...seen]
          .filter(([owner]) => hooks.hasSubscriber(owner))
          .map(([owner, after]) => [owner, { after, delivered: new Set<Seq>() }]),
      );
      // Owners with no stored frame delivered yet: their catch-up starts where their outbox ends now.
      for (const owner of hooks.owners()) if (!gaps.has(owner)) void noteGap(owner);
    },
    linkUp() {
      const missed = gaps;
      gaps = undefined;
      if (!missed || hooks.closed()) return undefined;
      const storage = hooks.storage;
      if (!storage) return () => Promise.resolve();
      replaying.add(missed);
      // Each read catches its own failure, so this never rejects.
      return () =>
        readBack(missed, storage)
          .then(() => undefined)
          .finally(() => replaying.delete(missed));
    },
  };
}
