/**
 * Shared state on Redis for a gateway that runs as several processes: login sessions
 * ({@link redisSessionStore}), failed-login counts and lockouts ({@link redisLockoutStore}), the
 * one-turn-at-a-time rule per lane ({@link redisLaneLock}) and each webhook's posts a minute
 * ({@link redisHookBudget}). Frames between processes go through
 * `chat-gateway/bus/redis`; durable data through `chat-gateway/storage/postgres`.
 *
 * Each factory takes an ioredis client of yours and never closes it: a single-node `Redis` or a
 * Redis Cluster client (`new Cluster(nodes)`); on a cluster the keys one script touches share a hash
 * tag, so they live in one slot (docs/MULTIPROCESS.md, "Redis Cluster").
 *
 * ```ts
 * import { Redis } from "ioredis";
 * import { redisLaneLock, redisLockoutStore, redisSessionStore } from "chat-gateway/redis";
 * const redis = new Redis(process.env.REDIS_URL);
 * const protection = createLoginProtection({ usersFile, sessions: redisSessionStore(redis), lockoutStore: redisLockoutStore(redis) });
 * const gateway = createGateway({ storage, runtime, bus, laneLock: redisLaneLock(redis), authenticator: protection.authenticator() });
 * ```
 *
 * Needs the optional peer dependency `ioredis`.
 * @module
 */
export { redisSessionStore } from "./sessions.js";
export type { RedisSessionStoreOptions } from "./sessions.js";
export { redisDeviceStore } from "./devices.js";
export type { RedisDeviceStoreOptions } from "./devices.js";
export { redisLockoutStore } from "./lockout.js";
export type { RedisLockoutStoreOptions } from "./lockout.js";
export { redisLaneLock } from "./lane-lock.js";
export { redisHookBudget } from "./hook-budget.js";
export type { RedisHookBudgetOptions } from "./hook-budget.js";
export type { RedisLaneLockOptions } from "./lane-lock.js";
export { subscriberOf, type RedisClient } from "./options.js";
