import { redisLockoutStore } from "chat-gateway/redis";
import { describeLockoutStoreConformance } from "chat-gateway/testing";
import { redisUnderTest } from "../fixtures/services.js";

describeLockoutStoreConformance("redis", () =>
  redisUnderTest((redis, peer, prefix) => ({
    store: redisLockoutStore(redis, { prefix }),
    peer: redisLockoutStore(peer, { prefix }),
  })),
);
