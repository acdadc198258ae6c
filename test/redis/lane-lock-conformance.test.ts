import { redisLaneLock } from "chat-gateway/redis";
import { describeLaneLockConformance } from "chat-gateway/testing";
import { redisUnderTest } from "../fixtures/services.js";

describeLaneLockConformance("redis", () =>
  redisUnderTest((redis, peer, prefix) => ({
    lock: redisLaneLock(redis, { prefix, ttlMs: 300 }),
    peer: redisLaneLock(peer, { prefix, ttlMs: 300 }),
  })),
);
