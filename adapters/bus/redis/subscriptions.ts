/**
 * The Redis channels one process listens on: one per owner with a device connected here, told to
 * Redis as devices come and go, batched per turn of the event loop.
 * @module
 */
import type { RedisClient } from "chat-gateway/redis";
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

/** What the subscriptions report to the bus. */
export interface SubscriptionHooks {
  /** Which owners were added and removed in a batch (for presence). */
  onFlush(added: Owner[], removed: Owner[]): void;
  /** Commands sent to Redis. */
  onCommand(count: number): void;
  warn(message: string): void;
}

/**
 * Tracks the subscriber connection's channels. `hooks.onFlush` hears which owners were added and
 * removed in each batch and `hooks.onCommand` counts the commands sent; failures go to `warn`.
 */
export function subscriptions(
  subscriber: RedisClient,
  prefix: string,
  mode: ChannelMode,
  hooks: SubscriptionHooks,
): Subscriptions {
  return new ChannelSet(subscriber, prefix, mode, hooks);
}

class ChannelSet implements Subscriptions {
  readonly #subscriber: RedisClient;
  readonly #hooks: SubscriptionHooks;
  readonly #shared: string;
  /** Every owner channel starts with it; the hash tag puts the channel in the owner's cluster slot. */
  readonly #ownerPrefix: string;
  /** Owners whose SUBSCRIBE went out and was not undone, with its acknowledgement. */
  readonly #sent = new Map<Owner, Promise<void>>();
  readonly #adds = new Map<Owner, Pending>();
  readonly #removes = new Set<Owner>();
  /** Unsubscriptions sent and not yet acknowledged. */
  readonly #unsubscribing = new Set<Promise<void>>();
  readonly #sharedReady: Promise<void>;
  #scheduled = false;
  #stopped = false;

  constructor(
    subscriber: RedisClient,
    prefix: string,
    readonly mode: ChannelMode,
    hooks: SubscriptionHooks,
  ) {
    this.#subscriber = subscriber;
    this.#hooks = hooks;
    this.#shared = `${prefix}bus`;
    this.#ownerPrefix = `${prefix}bus:{`;
    this.#sharedReady = mode === "shared" ? this.#command("subscribe", [this.#shared]) : Promise.resolve();
  }

  channelOf(owner: Owner): string {
    return this.mode === "shared" ? this.#shared : `${this.#ownerPrefix}${owner}}`;
  }

  isBusChannel = (channel: string): boolean =>
    this.mode === "shared" ? channel === this.#shared : channel.startsWith(this.#ownerPrefix);

  add(owner: Owner): void {
    // Removed and added back before the batch went out: the subscription never lapsed.
    if (this.#removes.delete(owner) || this.#sent.has(owner) || this.#adds.has(owner)) return;
    this.#adds.set(owner, pending());
    this.#schedule();
  }

  remove(owner: Owner): void {
    const queued = this.#adds.get(owner);
    if (queued) {
      this.#adds.delete(owner);
      queued.resolve();
      return;
    }
    if (!this.#sent.has(owner)) return;
    this.#removes.add(owner);
    this.#schedule();
  }

  active(owner: Owner): Promise<void> {
    return (
      this.#adds.get(owner)?.done ?? (this.#removes.has(owner) ? undefined : this.#sent.get(owner)) ?? Promise.resolve()
    );
  }

  async settled(): Promise<void> {
    // What waits for the next turn goes out now, so it is part of what this waits for.
    if (this.#scheduled) this.#flush();
    await this.#sharedReady;
    // On a Redis Cluster the bus's closing PING may go to another node than these: wait for their replies.
    await Promise.all([...[...this.#adds.values()].map((p) => p.done), ...this.#sent.values(), ...this.#unsubscribing]);
  }

  count(): number {
    return this.mode === "shared" ? 1 : this.#sent.size - this.#removes.size + this.#adds.size;
  }

  close(): void {
    this.#stopped = true;
    for (const p of this.#adds.values()) p.resolve();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // One command for the devices that arrive in the same turn (a reconnect storm, a restart).
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#stopped) return;
    const removed = [...this.#removes];
    this.#removes.clear();
    for (const owner of removed) this.#sent.delete(owner);
    const added = [...this.#adds];
    this.#adds.clear();
    // UNSUBSCRIBE with no channel would drop them all: send only with some.
    if (this.mode !== "shared" && removed.length) {
      const undone = this.#command(
        "unsubscribe",
        removed.map((o) => this.channelOf(o)),
      );
      this.#unsubscribing.add(undone);
      void undone.then(() => this.#unsubscribing.delete(undone));
    }
    const done =
      this.mode === "shared"
        ? this.#sharedReady
        : added.length
          ? this.#command(
              "subscribe",
              added.map(([o]) => this.channelOf(o)),
            )
          : undefined;
    for (const [owner, p] of added) {
      this.#sent.set(owner, done!);
      void done!.then(p.resolve);
    }
    this.#hooks.onFlush(
      added.map(([owner]) => owner),
      removed,
    );
  }

  #command(name: "subscribe" | "unsubscribe", channels: string[]): Promise<void> {
    const s = this.#subscriber;
    const calls =
      this.mode === "sharded"
        ? // Sharded channels of different slots cannot share one command on a cluster.
          channels.map((c) => (name === "subscribe" ? s.ssubscribe(c) : s.sunsubscribe(c)))
        : [name === "subscribe" ? s.subscribe(...channels) : s.unsubscribe(...channels)];
    this.#hooks.onCommand(calls.length);
    return Promise.all(calls).then(
      () => undefined,
      (error: Error) => this.#hooks.warn(`${name} failed: ${error.message}`),
    );
  }
}
