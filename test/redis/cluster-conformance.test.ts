// The Redis adapters on an ioredis `Cluster` client against a real 3-master Redis Cluster started
// here: the bus on sharded and per-owner channels, sessions, lockout and the lane lock.
import { afterAll, describe, expect, test } from "vitest";
import { redisBus, type ChannelMode } from "chat-gateway/bus/redis";
import { redisLaneLock, redisLockoutStore, redisSessionStore } from "chat-gateway/redis";
import {
  describeBusConformance,
  describeLaneLockConformance,
  describeLockoutStoreConformance,
  describeSessionStoreConformance,
} from "chat-gateway/testing";
import { clusterClient, clusterUnderTest, startCluster } from "../fixtures/redis-cluster.js";

const cluster = await startCluster("redis cluster conformance");
afterAll(() => cluster?.stop());

describe.skipIf(!cluster)("on a Redis Cluster", () => {
  const on = cluster!;
  // Sharded is the default on a Cluster client: the same suite with and without saying so.
  for (const channels of ["sharded", undefined] satisfies (ChannelMode | undefined)[]) {
    describeBusConformance(`redis cluster, ${channels ?? "default"} channels`, async () => {
      const made = await clusterUnderTest(on, (redis, peer, prefix) => ({
        bus: redisBus(redis, { prefix, channels }),
        peer: redisBus(peer, { prefix, channels }),
      }));
      await Promise.all([made.bus.ready(), made.peer.ready()]);
      return made;
    });
  }

  test("bus - per-owner and shared channels are refused on a Cluster client, where PUBLISH would reorder an owner's frames", () => {
    const client = clusterClient(on);
    try {
      for (const channels of ["owner", "shared"] satisfies ChannelMode[])
        expect(() => redisBus(client, { channels })).toThrow(/channels must be "sharded"/);
    } finally {
      client.disconnect();
    }
  });

  test("bus - owners in different slots that connect in one turn are all announced to the other processes", async () => {
    const { bus, peer, cleanup } = await clusterUnderTest(on, (redis, other, prefix) => ({
      bus: redisBus(redis, { prefix }),
      peer: redisBus(other, { prefix }),
    }));
    try {
      await Promise.all([bus.ready(), peer.ready()]);
      const owners = Array.from({ length: 12 }, (_, i) => `owner-${i}`);
      const leave = owners.map((owner) => bus.subscribe(owner, () => undefined));
      await bus.ready();
      await expect
        .poll(() => Promise.all(owners.map((owner) => peer.connected(owner))))
        .toEqual(owners.map(() => true));
      for (const off of leave) off();
      await bus.ready();
      await expect
        .poll(() => Promise.all(owners.map((owner) => peer.connected(owner))))
        .toEqual(owners.map(() => false));
    } finally {
      await Promise.all([bus.close?.(), peer.close?.()]);
      await cleanup();
    }
  });
  describeSessionStoreConformance("redis cluster", () =>
    clusterUnderTest(on, (redis, peer, prefix) => ({
      store: redisSessionStore(redis, { prefix }),
      peer: redisSessionStore(peer, { prefix }),
    })),
  );
  describeLockoutStoreConformance("redis cluster", () =>
    clusterUnderTest(on, (redis, peer, prefix) => ({
      store: redisLockoutStore(redis, { prefix }),
      peer: redisLockoutStore(peer, { prefix }),
    })),
  );
  describeLaneLockConformance("redis cluster", () =>
    clusterUnderTest(on, (redis, peer, prefix) => ({
      lock: redisLaneLock(redis, { prefix, ttlMs: 300 }),
      peer: redisLaneLock(peer, { prefix, ttlMs: 300 }),
    })),
  );
});
