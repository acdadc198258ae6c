import type { Redis } from "ioredis";

/** Key prefix shared by the Redis adapters unless told otherwise. */
export const DEFAULT_PREFIX = "chat-gateway:";

/** Refuses what is not an ioredis client, and prefixes that would collide with other data. */
export function checkRedis(factory: string, redis: Redis, prefix: string | undefined): string {
  if (typeof redis !== "object" || redis === null || typeof (redis as { eval?: unknown }).eval !== "function") {
    throw new TypeError(`${factory}: the first argument must be an ioredis client (new Redis(url))`);
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
