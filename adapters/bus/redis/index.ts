/**
 * A {@link Bus} over Redis pub/sub: a frame produced on one gateway process reaches the owner's
 * devices on every other process, live frames (`message.update`, `typing`, …) included. Each
 * process receives only the frames of owners with a device connected to it.
 *
 * ```ts
 * import { Redis } from "ioredis";
 * import { redisBus } from "chat-gateway/bus/redis";
 * const redis = new Redis(process.env.REDIS_URL);
 * const gateway = createGateway({ storage, runtime, bus: redisBus(redis, { storage }) });
 * ```
 *
 * Needs the optional peer dependency `ioredis`.
 * @module
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "eventemitter3";
import { subscriberOf, type RedisClient } from "chat-gateway/redis";
import {
  outboxCatchUp,
  resolveLogger,
  type Bus,
  type BusMessage,
  type Logger,
  type OutboxCatchUp,
  type Owner,
} from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { presence } from "./presence.js";
import { encode, publisher, receiver } from "./publisher.js";
import type { RedisBusStats } from "./stats.js";
import { subscriptions, type ChannelMode, type Subscriptions } from "./subscriptions.js";

export type { ChannelMode } from "./subscriptions.js";
export type { RedisBusStats } from "./stats.js";

/** Options of {@link redisBus}. */
export interface RedisBusOptions {
  /** Prefix of the pub/sub channels and keys (default `chat-gateway:`); processes that share it share frames. */
  prefix?: string;
  /**
   * How frames travel between processes (default `"owner"`, `"sharded"` on a Redis Cluster client).
   * Every process sharing a prefix must use the same mode.
   * - `"owner"`: a channel per owner (SUBSCRIBE / PUBLISH, any Redis version). A process subscribes
   *   to an owner's channel while a device of that owner is connected to it, so it receives only
   *   the frames of owners it serves.
   * - `"sharded"`: the same on sharded pub/sub (SSUBSCRIBE / SPUBLISH, Redis 7 or later). An
   *   owner's channel carries the owner as its hash tag (`<prefix>bus:{<owner>}`), so on a Redis
   *   Cluster it maps to the owner's slot and its frames stay on that shard instead of being
   *   copied to every node. The default, and the only mode, on an ioredis `Cluster` client (create
   *   it with `shardedSubscribers: true`).
   * - `"shared"`: one channel for every owner, as before per-owner channels: every process receives
   *   every frame and drops those of owners it does not serve. For a rolling upgrade from a version
   *   without per-owner channels.
   */
  channels?: ChannelMode;
  /**
   * The gateway's storage. With it, stored frames this process missed while its link to Redis was
   * down are read back from the outbox and delivered once the link is back, so its devices catch
   * up without asking. Without it they catch up on their next `sync` (reconnect).
   */
  storage?: Storage;
  /** Stored frames kept for re-sending while Redis is unreachable (default 10,000); older ones are dropped. */
  maxPending?: number;
  /** Receives link changes and failures as warnings. Default: the console, prefixed `chat-gateway/bus/redis:`. */
  logger?: Logger;
  /**
   * Receives the warnings {@link RedisBusOptions.logger} would.
   * @deprecated use logger
   */
  warn?: (message: string) => void;
}

/** A {@link Bus} that also reports what it did. */
export interface RedisBus extends Bus {
  readonly stats: RedisBusStats;
  /**
   * Without `owner`: resolves once both links to Redis (publishing and subscribing) are up and
   * every subscription and unsubscription asked for so far has taken effect. With `owner`: resolves once frames published for that owner from now on reach this
   * process (at most {@link SUBSCRIBE_WAIT_MS} later; at once while Redis is unreachable, after
   * noting where the owner's catch-up starts).
   */
  ready(owner?: Owner): Promise<void>;
  /**
   * True when the owner has a subscriber (a connected device) in any process sharing this bus.
   * For deciding whether an owner is away (push): a process alone only knows its own devices.
   * Rejects when Redis is unreachable.
   */
  connected(owner: Owner): Promise<boolean>;
}

/** How long `ready(owner)` waits for Redis to acknowledge a subscription (milliseconds). */
export const SUBSCRIBE_WAIT_MS = 2_000;

/** Waits for `work`, or `ms` milliseconds if that is sooner (then calls `late`). */
async function atMost(work: Promise<void>, ms: number, late: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      late();
      resolve();
    }, ms);
  });
  await Promise.race([work, timeout]);
  clearTimeout(timer);
}

/** `RedisBus.ready(owner)`: the owner's subscription is active, or the catch-up covers it. */
async function subscribed(
  owner: Owner,
  subscriber: RedisClient,
  subs: Subscriptions,
  recovery: OutboxCatchUp,
  warn: (message: string) => void,
): Promise<void> {
  // During an outage the SUBSCRIBE waits for the link; the catch-up covers the owner instead. At
  // start-up (no outage yet) it goes out once connected, so waiting for it is worth it.
  if (subscriber.status !== "ready" && recovery.down()) return recovery.noteGap(owner);
  await atMost(subs.active(owner), SUBSCRIBE_WAIT_MS, () =>
    warn(`the subscription for ${owner} was not acknowledged within ${SUBSCRIBE_WAIT_MS} ms`),
  );
}

/** `RedisBus.ready()`: both links up, every subscription and unsubscription asked for in effect. */
async function settled(redis: RedisClient, subscriber: RedisClient, subs: Subscriptions): Promise<void> {
  // Live frames published before the publishing link is up are dropped.
  const publishing = redis.status === "ready" ? undefined : new Promise((resolve) => redis.once("ready", resolve));
  await Promise.all([publishing, subs.settled()]);
  // Answered after every command sent before it: the unsubscriptions too have taken effect.
  await subscriber.ping();
}

/** The options with their defaults; throws TypeError on bad ones. */
function resolve(redis: RedisClient, options: RedisBusOptions) {
  if (
    typeof redis !== "object" ||
    redis === null ||
    typeof (redis as { duplicate?: unknown }).duplicate !== "function"
  ) {
    throw new TypeError(
      "redisBus: the first argument must be an ioredis client (new Redis(url) or new Cluster(nodes))",
    );
  }
  const prefix = options.prefix ?? "chat-gateway:";
  if (typeof prefix !== "string" || !prefix) throw new TypeError("redisBus: prefix must be a non-empty string");
  const mode = options.channels ?? (redis.isCluster ? "sharded" : "owner");
  if (mode !== "owner" && mode !== "sharded" && mode !== "shared")
    throw new TypeError('redisBus: channels must be "owner", "sharded" or "shared"');
  // A Cluster client sends each PUBLISH to any node, which relays it to all: an owner's frames
  // would overtake each other and every node would carry every frame.
  if (redis.isCluster && mode !== "sharded")
    throw new TypeError('redisBus: on a Redis Cluster client channels must be "sharded"');
  const maxPending = options.maxPending ?? 10_000;
  if (!Number.isInteger(maxPending) || maxPending < 0)
    throw new TypeError("redisBus: maxPending must be a non-negative integer");
  if (options.storage !== undefined && typeof options.storage?.readOutbox !== "function")
    throw new TypeError("redisBus: storage must be a Storage");
  const logger = resolveLogger("redisBus", "chat-gateway/bus/redis:", options.logger, {
    name: "warn",
    value: options.warn,
  });
  const warn = (message: string) => logger.warn(message);
  return { prefix, mode, maxPending, warn };
}

/** Follow the subscriber's link: note when it drops and read back the gap once it is up again. */
function watchLink(
  subscriber: RedisClient,
  recovery: OutboxCatchUp,
  hasStorage: boolean,
  isClosed: () => boolean,
  warn: (message: string) => void,
): void {
  // The subscription went down: the catch-up remembers where each owner was, to read back the gap.
  subscriber.on("close", () => {
    if (isClosed() || recovery.down()) return;
    warn("lost the Redis subscription; this process keeps serving its own devices");
    recovery.linkDown();
  });
  subscriber.on("ready", () => {
    const readBack = recovery.linkUp();
    if (!readBack) return;
    warn("Redis subscription is back");
    if (!hasStorage) return;
    // ioredis re-sends the subscriptions right after this event; a PING queued behind them is
    // answered once they are active, so whatever the outbox read misses arrives live.
    setImmediate(
      () =>
        void subscriber
          .ping()
          .catch(() => undefined)
          .then(readBack),
    );
  });
}

/**
 * What {@link redisBus} runs on: the duplicate that subscribes, the channels it holds, the presence
 * keys, the outbox catch-up and the publisher, wired to the local subscribers. `isClosed` tells the
 * parts that keep working in the background when the bus is closed.
 */
function links(redis: RedisClient, options: RedisBusOptions, isClosed: () => boolean) {
  const { prefix, mode, maxPending, warn } = resolve(redis, options);
  const origin = randomBytes(8).toString("hex");
  const local = new EventEmitter<Record<Owner, [BusMessage]>>();
  const hasSubscriber = (owner: Owner) => local.listenerCount(owner) > 0;
  const stats: RedisBusStats = {
    published: 0,
    received: 0,
    dropped: 0,
    recovered: 0,
    arrived: 0,
    arrivedBytes: 0,
    channels: 0,
    commands: 0,
  };

  const subscriber = subscriberOf(redis);
  const owners = () => local.eventNames() as Owner[];
  const count = (commands: number) => (stats.commands += commands);
  const here = presence(redis, prefix, origin, owners, count);
  const subs = subscriptions(subscriber, prefix, mode, {
    onFlush(added, removed) {
      stats.channels = subs.count();
      here.update(added, removed);
    },
    onCommand: count,
    warn,
  });
  const recovery = outboxCatchUp({
    storage: options.storage,
    owners,
    hasSubscriber,
    deliver,
    recovered: () => stats.recovered++,
    closed: isClosed,
    warn,
  });

  watchLink(subscriber, recovery, Boolean(options.storage), isClosed, warn);

  function deliver(message: BusMessage): void {
    const seq = message.frame.seq;
    if (seq !== undefined && hasSubscriber(message.owner)) recovery.delivered(message.owner, seq);
    local.emit(message.owner, message);
  }

  const out = publisher(redis, mode === "sharded", maxPending, stats, warn);
  const receive = receiver(origin, stats, { channel: subs.isBusChannel, owner: hasSubscriber }, deliver);
  subscriber.on(mode === "sharded" ? "smessageBuffer" : "messageBuffer", receive);
  return { origin, local, hasSubscriber, owners, stats, subscriber, here, subs, recovery, deliver, out, warn };
}

/**
 * Creates a {@link Bus} on Redis pub/sub. `redis` (yours, never closed by the bus) publishes; a
 * duplicate of it, owned by the bus, subscribes.
 *
 * Delivery: every message goes at once to this process's subscribers, so a process that loses
 * Redis keeps serving its own connections; it is also published on the owner's channel (see
 * {@link RedisBusOptions.channels}), tagged with this process's id so it is not delivered twice
 * here. A process subscribes to an owner's channel when the owner's first device connects to it
 * and unsubscribes when the last one leaves, batching the devices of one event-loop turn into one
 * command. Frames of one owner keep their order, since each process publishes on one connection
 * and Redis relays a channel in order. A message's `except` (the connection that got the frame as
 * its response) applies in the publishing process only.
 *
 * While Redis is unreachable, live frames are dropped (they are stale by the time it is back) and
 * stored frames (those with a `seq`) are kept, up to `maxPending`, and published when it is back.
 * With `storage`, what the others published meanwhile is read back from the outbox (see
 * {@link RedisBusOptions.storage}).
 *
 * @throws {TypeError} when `redis` is not an ioredis client or an option is bad
 */
export function redisBus(redis: RedisClient, options: RedisBusOptions = {}): RedisBus {
  let closed = false;
  const { origin, local, hasSubscriber, owners, stats, subscriber, here, subs, recovery, deliver, out, warn } = links(
    redis,
    options,
    () => closed,
  );

  return {
    stats,
    async ready(owner) {
      if (closed) return;
      if (owner !== undefined) return subscribed(owner, subscriber, subs, recovery, warn);
      await settled(redis, subscriber, subs);
    },
    async connected(owner) {
      if (hasSubscriber(owner)) return true;
      return here.anywhere(owner);
    },
    publish(message) {
      deliver(message);
      if (!closed) out.send(subs.channelOf(message.owner), encode(origin, message), message.frame.seq !== undefined);
    },
    subscribe(owner, listener) {
      if (!hasSubscriber(owner)) subs.add(owner);
      local.on(owner, listener);
      return () => {
        local.off(owner, listener);
        if (hasSubscriber(owner)) return;
        recovery.forget(owner);
        subs.remove(owner);
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      subs.close();
      out.close();
      await here.close(owners());
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
