import { redisBus, type ChannelMode } from "chat-gateway/bus/redis";
import { describeBusConformance } from "chat-gateway/testing";
import { redisUnderTest } from "../fixtures/services.js";

/** Two processes' buses on one prefix, both links up: live frames published before that are dropped by design. */
async function buses(channels: ChannelMode) {
  const made = await redisUnderTest((redis, peer, prefix) => ({
    bus: redisBus(redis, { prefix, channels }),
    peer: redisBus(peer, { prefix, channels }),
  }));
  await Promise.all([made.bus.ready(), made.peer.ready()]);
  return made;
}

for (const channels of ["owner", "sharded", "shared"] satisfies ChannelMode[])
  describeBusConformance(`redis, ${channels} channels`, () => buses(channels));
