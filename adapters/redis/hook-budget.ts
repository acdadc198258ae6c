import { randomBytes } from "node:crypto";
import type { HookPostBudget } from "chat-gateway/hooks";
import { checkRedis, withTimeout, type RedisClient } from "./options.js";

/** Options of {@link redisHookBudget}. The defaults are the webhook rule of docs/PROTOCOL.md §17. */
export interface RedisHookBudgetOptions {
  /** Prefix of every key (default `chat-gateway:`). */
  prefix?: string;
  /** Posts a hook may take in the window (default 60). */
  limit?: number;
  /** The sliding window, milliseconds (default 60,000). */
  windowMs?: number;
}

// Numbers are formatted by hand: Lua would write epoch milliseconds as 1.7e+12.
// KEYS: the hook's posts zset. ARGV: now, window ms, limit, member. Returns 0 when taken, else the
// milliseconds until the oldest post leaves the window.
const TAKE = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now - window))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0`;

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1) throw new TypeError(`redisHookBudget: ${name} must be a positive integer`);
  return v;
}

/**
 * A `HookPostBudget` (of `chat-gateway/hooks`) on Redis: each hook's posts are counted in one sliding
 * window across every gateway process, so the 60-a-minute rule holds however many processes take
 * posts. Each take is one Lua script, atomic in Redis; the window's set expires with it.
 *
 * ```ts
 * createHookHandler({ gateway, postBudget: redisHookBudget(redis) });
 * ```
 * @throws {TypeError} on a bad option
 */
export function redisHookBudget(redis: RedisClient, options: RedisHookBudgetOptions = {}): HookPostBudget {
  const prefix = checkRedis("redisHookBudget", redis, options.prefix);
  const limit = positive("limit", options.limit, 60);
  const windowMs = positive("windowMs", options.windowMs, 60_000);
  return {
    async take(hookId, now) {
      const at = Math.floor(now);
      const member = `${at}-${randomBytes(6).toString("hex")}`;
      const wait = (await withTimeout(
        redis.eval(TAKE, 1, `${prefix}hook-posts:${hookId}`, String(at), String(windowMs), String(limit), member),
        2_000,
        "redisHookBudget",
      )) as number;
      return wait === 0 ? 0 : Math.max(1, Math.ceil(wait / 1000));
    },
  };
}
