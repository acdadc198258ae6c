import { redisBus, type ChannelMode } from "chat-gateway/bus/redis";
import { describeBusConformance } from "chat-gateway/testing";
import { redisUnderTest } from "../fixtures/services.js";

for (const channels of ["owner", "sharded", "shared"] satisfies ChannelMode[]) {
  describeBusConformance(`redis, ${channels} channels`, () => redisUnderTest((redis, peer, prefix) => ({ bus: redisBus(redis, { prefix, channels }), peer: redisBus(peer, { prefix, channels }) })));
}
