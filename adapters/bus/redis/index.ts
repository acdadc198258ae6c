/**
 * A {@link Bus} over Redis pub/sub: a frame produced on one gateway process reaches the owner's
 * devices on every other process, live frames (`message.update`, `typing`, …) included.
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
import type { Redis } from "ioredis";
import type { Bus, BusMessage, OutgoingFrame, Owner, Seq, Storage } from "chat-gateway";

/** Options of {@link redisBus}. */
export interface RedisBusOptions {
  /** Prefix of the pub/sub channel (default `chat-gateway:`); processes that share it share frames. */
  prefix?: string;
  /**
   * The gateway's storage. With it, stored frames this process missed while its link to Redis was
   * down are read back from the outbox and delivered once the link is back, so its devices catch
   * up without asking. Without it they catch up on their next `sync` (reconnect).
   */
  storage?: Storage;
  /** Stored frames kept for re-sending while Redis is unreachable (default 10,000); older ones are dropped. */
  maxPending?: number;
  /** Where link changes and failures are reported (default `console.warn`). */
  warn?: (message: string) => void;
}

/** A process announces its owners this long (milliseconds); it renews them at a third of it. */
const PRESENCE_MS = 60_000;

/** What a {@link redisBus} did, for tests and metrics. */
export interface RedisBusStats {
  /** Messages published to Redis. */
  published: number;
  /** Messages received from other processes and delivered here. */
  received: number;
  /** Live frames dropped because Redis was unreachable. */
  dropped: number;
  /** Stored frames re-sent or re-read after an outage. */
  recovered: number;
}

/** A {@link Bus} that also reports what it did. */
export interface RedisBus extends Bus {
  readonly stats: RedisBusStats;
  /** Resolves once this process receives frames from the others (the subscription is active). */
  ready(): Promise<void>;
  /**
   * True when the owner has a subscriber (a connected device) in any process sharing this bus.
   * For deciding whether an owner is away (push): a process alone only knows its own devices.
   * Rejects when Redis is unreachable.
   */
  connected(owner: Owner): Promise<boolean>;
}

const MAX_REPLAY = 10_000;

/**
 * Creates a {@link Bus} on Redis pub/sub. `redis` (yours, never closed by the bus) publishes; a
 * duplicate of it, owned by the bus, subscribes.
 *
 * Delivery: every message goes at once to this process's subscribers, so a process that loses
 * Redis keeps serving its own connections; it is also published on one channel that every process
 * subscribes to, tagged with this process's id so it is not delivered twice here. Frames of one
 * owner keep their order, since each process publishes on one connection and Redis relays in order.
 * A message's `except` (the connection that got the frame as its response) applies in the
 * publishing process only: connection ids are unique per process, not across them.
 *
 * While Redis is unreachable, live frames are dropped (they are stale by the time it is back) and
 * stored frames (those with a `seq`) are kept, up to `maxPending`, and published when it is back.
 * With `storage`, what the others published meanwhile is read back from the outbox (see
 * {@link RedisBusOptions.storage}). Each process receives every owner's frames and drops those of
 * owners with no device connected to it; that costs one header parse per message.
 *
 * @throws {TypeError} when `redis` is not an ioredis client or an option is bad
 */
export function redisBus(redis: Redis, options: RedisBusOptions = {}): RedisBus {
  if (typeof redis !== "object" || redis === null || typeof (redis as { duplicate?: unknown }).duplicate !== "function") {
    throw new TypeError("redisBus: the first argument must be an ioredis client (new Redis(url))");
  }
  const prefix = options.prefix ?? "chat-gateway:";
  if (typeof prefix !== "string" || !prefix) throw new TypeError("redisBus: prefix must be a non-empty string");
  const maxPending = options.maxPending ?? 10_000;
  if (!Number.isInteger(maxPending) || maxPending < 0) throw new TypeError("redisBus: maxPending must be a non-negative integer");
  if (options.storage !== undefined && typeof options.storage?.readOutbox !== "function") throw new TypeError("redisBus: storage must be a Storage");
  const warn = options.warn ?? ((message: string) => console.warn(`chat-gateway/bus/redis: ${message}`));
  const channel = `${prefix}bus`;
  const origin = randomBytes(8).toString("hex");
  const local = new EventEmitter<Record<Owner, [BusMessage]>>();
  const stats: RedisBusStats = { published: 0, received: 0, dropped: 0, recovered: 0 };
  /** Stored frames that could not be published, oldest first. */
  const pending: string[] = [];
  /** Highest `seq` delivered here per owner with a subscriber; where a replay starts. */
  const seen = new Map<Owner, Seq>();
  /** Per owner, while the subscription is down: the seq the gap starts after and what was delivered since. */
  let gaps: Map<Owner, { after: Seq; delivered: Set<Seq> }> | undefined;
  /** Gaps being read back; frames delivered meanwhile are recorded so none is delivered twice. */
  const replaying = new Set<Map<Owner, { after: Seq; delivered: Set<Seq> }>>();
  let closed = false;

  // Queued while connecting, whatever the caller's client does: SUBSCRIBE must survive start-up and reconnects.
  const subscriber = redis.duplicate({ lazyConnect: false, enableOfflineQueue: true, autoResubscribe: true });
  subscriber.on("error", () => undefined);
  let subscribed: Promise<void> = subscriber.subscribe(channel).then(() => undefined);
  subscribed.catch((error: Error) => warn(`subscribe failed: ${error.message}`));

  function deliver(message: BusMessage): void {
    const seq = message.frame.seq;
    if (seq !== undefined && local.listenerCount(message.owner) > 0) {
      if (seq > (seen.get(message.owner) ?? 0)) seen.set(message.owner, seq);
      gaps?.get(message.owner)?.delivered.add(seq);
      for (const gap of replaying) gap.get(message.owner)?.delivered.add(seq);
    }
    local.emit(message.owner, message);
  }

  function encode(message: BusMessage): string {
    // Header on a line of its own, so a process with no device of the owner skips parsing the frame.
    return `${JSON.stringify([origin, message.owner])}\n${JSON.stringify(message.frame)}`;
  }

  function send(text: string, stored: boolean): void {
    if (redis.status !== "ready") {
      if (!stored) {
        stats.dropped++;
        return;
      }
      pending.push(text);
      if (pending.length > maxPending) {
        pending.shift();
        stats.dropped++;
      }
      return;
    }
    stats.published++;
    redis.publish(channel, text).catch((error: Error) => {
      stats.dropped++;
      warn(`publish failed: ${error.message}`);
    });
  }

  // The publishing link is back: what was kept goes out first, in order.
  const flush = () => {
    const kept = pending.splice(0);
    if (kept.length) stats.recovered += kept.length;
    for (const text of kept) send(text, true);
  };
  redis.on("ready", flush);

  subscriber.on("message", (from: string, text: string) => {
    if (from !== channel) return;
    const cut = text.indexOf("\n");
    if (cut < 0) return;
    let header: [string, Owner];
    try {
      header = JSON.parse(text.slice(0, cut)) as [string, Owner];
    } catch {
      return;
    }
    const [sender, owner] = header;
    if (sender === origin || local.listenerCount(owner) === 0) return;
    let frame: OutgoingFrame;
    try {
      frame = JSON.parse(text.slice(cut + 1)) as OutgoingFrame;
    } catch {
      return;
    }
    stats.received++;
    // `except` names a connection of the publishing process; connection ids are only unique per
    // process, so here it could name an unrelated device. Every device here gets the frame.
    deliver({ owner, frame });
  });

  // The subscription is down: remember where each connected owner was, to read back the gap.
  subscriber.on("close", () => {
    if (closed || gaps) return;
    warn("lost the Redis subscription; this process keeps serving its own devices");
    gaps = new Map([...seen].filter(([owner]) => local.listenerCount(owner) > 0).map(([owner, after]) => [owner, { after, delivered: new Set<Seq>() }]));
  });
  // ioredis subscribes again on reconnect, then reports ready.
  subscriber.on("ready", () => {
    const missed = gaps;
    gaps = undefined;
    if (!missed || closed) return;
    warn("Redis subscription is back");
    const storage = options.storage;
    if (!storage) return;
    replaying.add(missed);
    const reads = [...missed].map(([owner, gap]) =>
      storage
        .readOutbox(owner, gap.after, MAX_REPLAY)
        .then((entries) => {
          for (const entry of entries) {
            if (gap.delivered.has(entry.seq) || local.listenerCount(owner) === 0) continue;
            stats.recovered++;
            deliver({ owner, frame: { type: entry.type, payload: entry.payload, seq: entry.seq } });
          }
        })
        .catch((error: Error) => warn(`reading back the frames missed by ${owner} failed: ${error.message}`)),
    );
    void Promise.all(reads).finally(() => replaying.delete(missed));
  });

  // Presence: per owner a sorted set of the processes with a subscriber, scored by when the entry
  // lapses, so a crashed process drops out by itself after PRESENCE_MS.
  const presenceKey = (owner: Owner) => `${prefix}presence:${owner}`;
  const announce = (owners: Owner[]) => {
    if (!owners.length || redis.status !== "ready") return;
    const until = Date.now() + PRESENCE_MS;
    const batch = redis.pipeline();
    for (const owner of owners) batch.zadd(presenceKey(owner), until, origin).pexpire(presenceKey(owner), PRESENCE_MS);
    batch.exec().catch(() => undefined);
  };
  const renewPresence = setInterval(() => announce(local.eventNames() as Owner[]), PRESENCE_MS / 3);
  renewPresence.unref();
  const announceAll = () => announce(local.eventNames() as Owner[]);
  redis.on("ready", announceAll);

  return {
    stats,
    ready() {
      return subscribed;
    },
    async connected(owner) {
      if (local.listenerCount(owner) > 0) return true;
      return (await redis.zcount(presenceKey(owner), `(${Date.now()}`, "+inf")) > 0;
    },
    publish(message) {
      deliver(message);
      if (!closed) send(encode(message), message.frame.seq !== undefined);
    },
    subscribe(owner, listener) {
      if (local.listenerCount(owner) === 0) announce([owner]);
      local.on(owner, listener);
      return () => {
        local.off(owner, listener);
        if (local.listenerCount(owner) > 0) return;
        seen.delete(owner);
        if (redis.status === "ready") redis.zrem(presenceKey(owner), origin).catch(() => undefined);
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(renewPresence);
      redis.off("ready", flush);
      redis.off("ready", announceAll);
      if (redis.status === "ready") {
        const owners = local.eventNames() as Owner[];
        if (owners.length) {
          const batch = redis.pipeline();
          for (const owner of owners) batch.zrem(presenceKey(owner), origin);
          await batch.exec().catch(() => undefined);
        }
      }
      subscribed = Promise.resolve();
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
