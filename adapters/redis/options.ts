import type { Cluster, Redis } from "ioredis";

/** What the Redis adapters take: a single-node client (`new Redis(url)`) or a Redis Cluster client (`new Cluster(nodes)`). */
export type RedisClient = Redis | Cluster;

/** True for an ioredis `Cluster` client. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis.isCluster;
}

/** Key prefix shared by the Redis adapters unless told otherwise. */
export const DEFAULT_PREFIX = "chat-gateway:";

/** Refuses what is not an ioredis client, and prefixes that would collide with other data. */
export function checkRedis(factory: string, redis: RedisClient, prefix: string | undefined): string {
  if (typeof redis !== "object" || redis === null || typeof (redis as { eval?: unknown }).eval !== "function") {
    throw new TypeError(
      `${factory}: the first argument must be an ioredis client (new Redis(url) or new Cluster(nodes))`,
    );
  }
  const p = prefix ?? DEFAULT_PREFIX;
  if (typeof p !== "string" || p.length === 0) throw new TypeError(`${factory}: prefix must be a non-empty string`);
  return p;
}

/** Rejects when `work` takes longer than `ms`: a Redis that is down must not hang a caller forever. */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: Redis did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * A second connection for SUBSCRIBE, of the same kind as `redis` (a `Cluster` for a `Cluster`) and
 * owned by the caller: its commands are queued while connecting and its subscriptions renewed after
 * a reconnect whatever `redis` was told, since a subscription must survive both. Used by
 * `chat-gateway/bus/redis` and {@link redisSessionStore}'s revocations.
 */
export function subscriberOf(redis: RedisClient): RedisClient {
  const sub = isCluster(redis)
    ? redis.duplicate([], {
        enableOfflineQueue: true,
        redisOptions: { ...redis.options.redisOptions, autoResubscribe: true },
      })
    : (redis as Redis).duplicate({ lazyConnect: false, enableOfflineQueue: true, autoResubscribe: true });
  sub.on("error", () => undefined);
  return sub;
}
