import { randomBytes } from "node:crypto";
import { resolveLogger, type LaneLease, type LaneLock, type Logger } from "chat-gateway";
import { checkRedis, withTimeout, type RedisClient } from "./options.js";

/** Options of {@link redisLaneLock}. */
export interface RedisLaneLockOptions {
  /** Prefix of every key (default `chat-gateway:`). */
  prefix?: string;
  /**
   * Lifetime of a lease in milliseconds (default 15,000). A live holder renews it every third of
   * this; a crashed holder's lane is free again at most this long after its last renewal.
   */
  ttlMs?: number;
  /** First wait between attempts on a held lane, milliseconds (default 25); doubles up to 400. */
  pollMs?: number;
  /** Give up waiting after this many milliseconds (default 600,000); the gateway then runs the turn without the lock and logs it. */
  maxWaitMs?: number;
  /** A Redis command that takes longer than this fails (milliseconds, default 2,000), so an outage cannot hang a turn. */
  commandTimeoutMs?: number;
  /** Receives a lost lease as a warning. Default: the console, prefixed `chat-gateway/redis:`. */
  logger?: Logger;
  /**
   * Receives the warnings {@link RedisLaneLockOptions.logger} would.
   * @deprecated use logger
   */
  warn?: (message: string) => void;
}

// KEYS: lease. ARGV: token, ttl ms. Extends only our own lease.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
// KEYS: lease. ARGV: token. Deletes only our own lease: an expired one may already be someone else's.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isFinite(v) || v <= 0)
    throw new TypeError(`redisLaneLock: ${name} must be a positive number of milliseconds`);
  return v;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", done);
      clearTimeout(timer);
      if (signal.aborted) reject(signal.reason);
      else resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * A {@link LaneLock} on Redis: one turn at a time per lane across every gateway process. A lease is
 * a key set with `SET NX PX` to a random token; while held it is renewed every `ttlMs / 3` by a
 * compare-and-`PEXPIRE` script, and released by a compare-and-delete script, so a holder never
 * extends or frees a lease that expired and went to another process. A waiting process polls with
 * backoff. A holder that crashes stops renewing, and its lane is free within `ttlMs`.
 *
 * ```ts
 * createGateway({ storage, runtime, bus, laneLock: redisLaneLock(redis) });
 * ```
 * @throws {TypeError} on a bad option
 */
export function redisLaneLock(redis: RedisClient, options: RedisLaneLockOptions = {}): LaneLock {
  const prefix = checkRedis("redisLaneLock", redis, options.prefix);
  const ttlMs = Math.ceil(positive("ttlMs", options.ttlMs, 15_000));
  const pollMs = positive("pollMs", options.pollMs, 25);
  const maxWaitMs = positive("maxWaitMs", options.maxWaitMs, 600_000);
  const timeoutMs = positive("commandTimeoutMs", options.commandTimeoutMs, 2_000);
  const logger = resolveLogger("redisLaneLock", "chat-gateway/redis:", options.logger, {
    name: "warn",
    value: options.warn,
  });

  return {
    async acquire(key, signal) {
      const leaseKey = `${prefix}lane:${key}`;
      const token = randomBytes(16).toString("hex");
      const deadline = Date.now() + maxWaitMs;
      let wait = pollMs;
      for (;;) {
        if (signal.aborted) throw signal.reason;
        const set = await withTimeout(redis.set(leaseKey, token, "PX", ttlMs, "NX"), timeoutMs, "redisLaneLock");
        if (set === "OK") break;
        if (Date.now() >= deadline) throw new Error(`redisLaneLock: lane ${key} still held after ${maxWaitMs} ms`);
        await sleep(Math.min(wait, Math.max(1, deadline - Date.now())), signal);
        wait = Math.min(wait * 2, 400);
      }
      let released = false;
      const lost = new AbortController();
      const renew = setInterval(
        () => {
          withTimeout(redis.eval(RENEW, 1, leaseKey, token, String(ttlMs)), timeoutMs, "redisLaneLock")
            .then((kept) => {
              if (kept === 0 && !released) {
                clearInterval(renew);
                lost.abort(new Error(`redisLaneLock: lease of lane ${key} was lost`));
                logger.warn(
                  `lease of lane ${key} was lost (Redis unreachable for longer than ttlMs?); another process may start a turn on it`,
                );
              }
            })
            // A failed renewal is retried at the next tick; the lease lives ttlMs from the last success.
            .catch(() => undefined);
        },
        Math.max(1, Math.floor(ttlMs / 3)),
      );
      renew.unref();
      const lease: LaneLease = {
        lost: lost.signal,
        async release() {
          if (released) return;
          released = true;
          clearInterval(renew);
          // If Redis is down the lease simply expires: nobody else can hold it meanwhile.
          await withTimeout(redis.eval(RELEASE, 1, leaseKey, token), timeoutMs, "redisLaneLock").catch(() => undefined);
        },
      };
      return lease;
    },
  };
}
