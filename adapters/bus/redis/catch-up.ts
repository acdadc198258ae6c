/**
 * Catch-up after the subscription to Redis was down: stored frames the other processes published
 * meanwhile are read back from the outbox, once each, for the owners with a device here.
 * @module
 */
import type { Redis } from "ioredis";
import type { BusMessage, Owner, Seq, Storage } from "chat-gateway";

/** Frames read back per owner at most. */
const MAX_REPLAY = 10_000;

/** Per owner: the seq the gap starts after, and what was delivered since (not to deliver twice). */
type Gaps = Map<Owner, { after: Seq; delivered: Set<Seq> }>;

/** What the catch-up needs from the bus. */
export interface CatchUpHooks {
  storage: Storage | undefined;
  /** Owners with a subscriber here. */
  owners(): Owner[];
  hasSubscriber(owner: Owner): boolean;
  /** Delivers a frame read back to this process's subscribers. */
  deliver(message: BusMessage): void;
  recovered(): void;
  closed(): boolean;
  warn(message: string): void;
}

/** Tracks what this process received, to read back what it missed. */
export interface CatchUp {
  /** A stored frame was delivered to a subscriber here. */
  delivered(owner: Owner, seq: Seq): void;
  /** The owner's last subscriber here left. */
  forget(owner: Owner): void;
  /** True while the subscription is down. */
  down(): boolean;
  /** While it is down, an owner's first subscriber here: its catch-up starts at the outbox's end now. */
  noteGap(owner: Owner): Promise<void>;
}

/** Watches `subscriber` for the subscription going down and coming back. */
export function catchUp(subscriber: Redis, hooks: CatchUpHooks): CatchUp {
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

  function readBack(missed: Gaps, storage: Storage): Promise<unknown> {
    const reads = [...missed].map(([owner, gap]) =>
      storage
        .readOutbox(owner, gap.after, MAX_REPLAY)
        .then((entries) => {
          for (const entry of entries) {
            if (gap.delivered.has(entry.seq) || !hooks.hasSubscriber(owner)) continue;
            hooks.recovered();
            hooks.deliver({ owner, frame: { type: entry.type, payload: entry.payload, seq: entry.seq } });
          }
        })
        .catch((error: Error) => hooks.warn(`reading back the frames missed by ${owner} failed: ${error.message}`)),
    );
    return Promise.all(reads);
  }

  // The subscription is down: remember where each connected owner was, to read back the gap.
  subscriber.on("close", () => {
    if (hooks.closed() || gaps) return;
    hooks.warn("lost the Redis subscription; this process keeps serving its own devices");
    gaps = new Map([...seen].filter(([owner]) => hooks.hasSubscriber(owner)).map(([owner, after]) => [owner, { after, delivered: new Set<Seq>() }]));
    // Owners with no stored frame delivered yet: their catch-up starts where their outbox ends now.
    for (const owner of hooks.owners()) if (!gaps.has(owner)) void noteGap(owner);
  });

  subscriber.on("ready", () => {
    const missed = gaps;
    gaps = undefined;
    if (!missed || hooks.closed()) return;
    hooks.warn("Redis subscription is back");
    const storage = hooks.storage;
    if (!storage) return;
    replaying.add(missed);
    // ioredis re-sends the subscriptions right after this event; a PING queued behind them is
    // answered once they are active, so whatever the outbox read misses arrives live.
    setImmediate(() => {
      void subscriber
        .ping()
        .catch(() => undefined)
        .then(() => readBack(missed, storage))
        .finally(() => replaying.delete(missed));
    });
  });

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
  };
}
