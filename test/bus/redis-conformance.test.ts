import { redisBus } from "chat-gateway/bus/redis";
import { describeBusConformance } from "chat-gateway/testing";
import { redisUnderTest } from "../fixtures/services.js";

describeBusConformance("redis", () => redisUnderTest((redis, peer, prefix) => ({ bus: redisBus(redis, { prefix }), peer: redisBus(peer, { prefix }) })));
