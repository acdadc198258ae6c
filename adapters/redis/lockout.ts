import { randomBytes } from "node:crypto";
import type { LockoutStore, SharedLockoutCheck } from "chat-gateway/login";
import { checkRedis, isCluster, type RedisClient } from "./options.js";

/** Options of {@link redisLockoutStore}. The defaults are the lockout rule of docs/PROTOCOL.md §9.6. */
export interface RedisLockoutStoreOptions {
  /** Prefix of every key (default `chat-gateway:`). */
  prefix?: string;
  /** Failures that lock an IP (default 10). */
  maxFailures?: number;
  /** Window in which they count, milliseconds (default 300,000). */
  windowMs?: number;
  /** How long a lockout lasts, milliseconds (default 900,000). */
  lockMs?: number;
}

// Numbers are formatted by hand: Lua would write epoch milliseconds as 1.7e+12.
// KEYS: failures zset, lock. ARGV: now, window ms. Returns {locked, until, failures}.
const CHECK = `
local now = tonumber(ARGV[1])
local untilMs = tonumber(redis.call('GET', KEYS[2]) or '0')
if untilMs > now then return {1, untilMs, 0} end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - tonumber(ARGV[2])))
return {0, 0, redis.call('ZCARD', KEYS[1])}`;

// KEYS: failures zset, lock. ARGV: now, window ms, max, lock ms, member. Returns 1 when it locked.
const FAIL = `
local now = tonumber(ARGV[1])
local untilMs = tonumber(redis.call('GET', KEYS[2]) or '0')
if untilMs > now then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - tonumber(ARGV[2])))
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[5])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], string.format('%.0f', now + tonumber(ARGV[4])), 'PX', ARGV[4])
  return 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0`;

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1) throw new TypeError(`redisLockoutStore: ${name} must be a positive integer`);
  return v;
}

/**
 * A `LockoutStore` (of `chat-gateway/login`) on Redis: failed logins are counted per IP across every
 * gateway process, so spreading attempts over processes does not escape the 10-per-IP rule. Each
 * operation is one Lua script, atomic in Redis. Failures are a sorted set by time that expires with
 * its window; a lockout is a key holding its end that expires with it.
 *
 * ```ts
 * createLoginProtection({ usersFile, sessions: redisSessionStore(redis), lockoutStore: redisLockoutStore(redis) });
 * ```
 * @throws {TypeError} on a bad option
 */
export function redisLockoutStore(redis: RedisClient, options: RedisLockoutStoreOptions = {}): LockoutStore {
  const prefix = checkRedis("redisLockoutStore", redis, options.prefix);
  const max = positive("maxFailures", options.maxFailures, 10);
  const windowMs = positive("windowMs", options.windowMs, 300_000);
  const lockMs = positive("lockMs", options.lockMs, 900_000);
  // Both scripts touch both keys of an IP: on a cluster the IP is their hash tag, so they share a
  // slot. A single Redis keeps the untagged names, so running deployments keep their counts.
  const tag = isCluster(redis) ? (ip: string) => `{${ip}}` : (ip: string) => ip;
  const keys = (ip: string) => [`${prefix}login-failures:${tag(ip)}`, `${prefix}login-lock:${tag(ip)}`] as const;
  return {
    async check(ip, now): Promise<SharedLockoutCheck> {
      const [locked, until, failures] = (await redis.eval(
        CHECK,
        2,
        ...keys(ip),
        String(Math.floor(now)),
        String(windowMs),
      )) as [number, number, number];
      if (locked === 1) return { locked: true, retryAfter: Math.max(1, Math.ceil((until - now) / 1000)), failures: 0 };
      return { locked: false, failures };
    },
    async fail(ip, now) {
      const member = `${Math.floor(now)}-${randomBytes(6).toString("hex")}`;
      return (
        (await redis.eval(
          FAIL,
          2,
          ...keys(ip),
          String(Math.floor(now)),
          String(windowMs),
          String(max),
          String(lockMs),
          member,
        )) === 1
      );
    },
    async succeed(ip) {
      await redis.del(keys(ip)[0]);
    },
  };
}
