// The Redis side of the multi-process mode (REDIS_URL): what the processes of one deployment share,
// so a login, a lockout, a lane's lock, a hook's post budget and every outbox frame count for all.
import type { Bus, LaneLock, Logger, SessionStore } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import type { HookPostBudget } from "chat-gateway/hooks";
import type { LockoutStore } from "chat-gateway/login";
import type { ServerConfig } from "./config.js";

export interface SharedState {
  sessions: SessionStore;
  lockoutStore: LockoutStore;
  laneLock: LaneLock;
  hookBudget: HookPostBudget;
  /** Whether the Redis connection is up now. */
  connected(): boolean;
  bus(storage: Storage): Bus & { ready(): Promise<void> };
  close(): Promise<void>;
}

/** The Redis side of the multi-process mode, or undefined without REDIS_URL. */
export async function sharedState(
  config: ServerConfig,
  log: (line: string) => void,
  logger: Logger,
): Promise<SharedState | undefined> {
  if (!config.redisUrl) return undefined;
  const [{ Redis }, { redisBus }, { redisHookBudget, redisLaneLock, redisLockoutStore, redisSessionStore }] =
    await Promise.all([import("ioredis"), import("chat-gateway/bus/redis"), import("chat-gateway/redis")]);
  // No offline queue: while Redis is down a command fails at once instead of piling up, so logins
  // answer with an error, turns run without the lane lock and frames stay local (and are re-sent).
  const redis = new Redis(config.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  let down = false;
  redis.on("error", (error: Error) => {
    if (!down) log(`redis: ${error.message}; retrying`);
    down = true;
  });
  redis.on("ready", () => {
    if (down) log("redis: connected again");
    down = false;
  });
  await redis.connect();
  const prefix = config.redisPrefix;
  let bus: (Bus & { ready(): Promise<void> }) | undefined;
  return {
    sessions: redisSessionStore(redis, { prefix }),
    lockoutStore: redisLockoutStore(redis, { prefix }),
    laneLock: redisLaneLock(redis, { prefix, ttlMs: config.laneTtlMs, logger }),
    hookBudget: redisHookBudget(redis, { prefix }),
    connected: () => redis.status === "ready",
    bus(storage) {
      bus ??= redisBus(redis, { prefix, storage, logger });
      return bus;
    },
    async close() {
      await bus?.close?.();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
