/**
 * The Redis channels one process listens on: one per owner with a device connected here, told to
 * Redis as devices come and go, batched per turn of the event loop.
 * @module
 */
import type { Redis } from "ioredis";
import type { Owner } from "chat-gateway";

/**
 * How frames travel between processes:
 * - `"owner"`: a channel per owner (SUBSCRIBE / PUBLISH, any Redis version).
 * - `"sharded"`: a channel per owner on sharded pub/sub (SSUBSCRIBE / SPUBLISH, Redis 7).
 * - `"shared"`: one channel for every owner (every process receives every frame).
 */
export type ChannelMode = "owner" | "sharded" | "shared";

/** What the subscriber connection is told, and when it has taken effect. */
export interface Subscriptions {
  readonly mode: ChannelMode;
  /** The channel that carries an owner's frames. */
  channelOf(owner: Owner): string;
  /** Whether a message on this channel is one of the bus's. */
  isBusChannel(channel: string): boolean;
  /** Start receiving the owner's frames (sent to Redis on the next turn of the event loop). */
  add(owner: Owner): void;
  /** Stop receiving them. */
  remove(owner: Owner): void;
  /** Resolves once Redis has acknowledged the owner's subscription (at once when not subscribed). */
  active(owner: Owner): Promise<void>;
  /** Sends what is batched now; resolves once every subscription asked for so far is acknowledged. */
  settled(): Promise<void>;
  /** Channels subscribed now (the shared one counts once). */
  count(): number;
  /** Send nothing more (the connection is closing). */
  close(): void;
}

interface Pending {
  done: Promise<void>;
  resolve: () => void;
}

function pending(): Pending {
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  return { done, resolve };
}

/**
 * Tracks the subscriber connection's channels. `onFlush` hears which owners were added and removed
 * in each batch (for presence) and `onCommand` counts the commands sent; failures go to `warn`.
 */
export function subscriptions(
  subscriber: Redis,
  prefix: string,
  mode: ChannelMode,
  hooks: { onFlush(added: Owner[], removed: Owner[]): void; onCommand(count: number): void; warn(message: string): void },
): Subscriptions {
  const shared = `${prefix}bus`;
  // The hash tag puts an owner's channel in the owner's cluster slot, with the owner's other keys.
  const ownerPrefix = `${prefix}bus:{`;
  const channelOf = (owner: Owner) => (mode === "shared" ? shared : `${ownerPrefix}${owner}}`);
  /** Owners whose SUBSCRIBE went out and was not undone, with its acknowledgement. */
  const sent = new Map<Owner, Promise<void>>();
  const adds = new Map<Owner, Pending>();
  const removes = new Set<Owner>();
  let scheduled = false;
  let stopped = false;
  const sharedReady = mode === "shared" ? command("subscribe", [shared]) : Promise.resolve();

  function command(name: "subscribe" | "unsubscribe", channels: string[]): Promise<void> {
    const sharded = mode === "sharded";
    const calls =
      sharded
        ? // Sharded channels of different slots cannot share one command on a cluster.
          channels.map((c) => (name === "subscribe" ? subscriber.ssubscribe(c) : subscriber.sunsubscribe(c)))
        : [name === "subscribe" ? subscriber.subscribe(...channels) : subscriber.unsubscribe(...channels)];
    hooks.onCommand(calls.length);
    return Promise.all(calls).then(
      () => undefined,
      (error: Error) => hooks.warn(`${name} failed: ${error.message}`),
    );
  }

  function flush(): void {
    scheduled = false;
    if (stopped) return;
    const removed = [...removes];
    removes.clear();
    for (const owner of removed) sent.delete(owner);
    const added = [...adds];
    adds.clear();
    if (mode !== "shared") {
      // UNSUBSCRIBE with no channel would drop them all: send only with some.
      if (removed.length) void command("unsubscribe", removed.map(channelOf));
      if (added.length) {
        const done = command("subscribe", added.map(([owner]) => channelOf(owner)));
        for (const [owner, p] of added) {
          sent.set(owner, done);
          void done.then(p.resolve);
        }
      }
    } else {
      for (const [owner, p] of added) {
        sent.set(owner, sharedReady);
        void sharedReady.then(p.resolve);
      }
    }
    hooks.onFlush(
      added.map(([owner]) => owner),
      removed,
    );
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    // One command for the devices that arrive in the same turn (a reconnect storm, a restart).
    setImmediate(flush);
  }

  return {
    mode,
    channelOf,
    isBusChannel: (channel) => (mode === "shared" ? channel === shared : channel.startsWith(ownerPrefix)),
    add(owner) {
      // Removed and added back before the batch went out: the subscription never lapsed.
      if (removes.delete(owner) || sent.has(owner) || adds.has(owner)) return;
      adds.set(owner, pending());
      schedule();
    },
    remove(owner) {
      const queued = adds.get(owner);
      if (queued) {
        adds.delete(owner);
        queued.resolve();
        return;
      }
      if (!sent.has(owner)) return;
      removes.add(owner);
      schedule();
    },
    active(owner) {
      return adds.get(owner)?.done ?? (removes.has(owner) ? undefined : sent.get(owner)) ?? Promise.resolve();
    },
    async settled() {
      // What waits for the next turn goes out now, so it is part of what this waits for.
      if (scheduled) flush();
      await sharedReady;
      await Promise.all([...[...adds.values()].map((p) => p.done), ...sent.values()]);
    },
    count() {
      return mode === "shared" ? 1 : sent.size - removes.size + adds.size;
    },
    close() {
      stopped = true;
      for (const p of adds.values()) p.resolve();
    },
  };
}
