import { redisSessionStore } from "chat-gateway/redis";
import { describeSessionStoreConformance } from "chat-gateway/testing";
import { redisUnderTest } from "../fixtures/services.js";

describeSessionStoreConformance("redis", () =>
  redisUnderTest((redis, peer, prefix) => ({
    store: redisSessionStore(redis, { prefix }),
    peer: redisSessionStore(peer, { prefix }),
  })),
);
