// The DeviceTokenStore contract (docs/PROTOCOL.md §16) run against each store: the memory one, the
// devices.json file (two instances standing for two processes) and Redis (two connections). The cap
// and the parent check hold under many adds at once, a removal takes the devices the removed one
// paired, transitively, and a touch never brings a revoked device back.
import path from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { deviceTokenDigest } from "../../adapters/http/device-store.js";
import { fileDeviceStore, memoryDeviceStore, type DeviceTokenStore, type StoredDevice } from "chat-gateway/devices";
import { redisDeviceStore } from "chat-gateway/redis";
import { dropKeys, REDIS_URL, redisAvailable, runId } from "../fixtures/services.js";
import { tempDir } from "./helpers.js";

const redisUp = await redisAvailable("device store contract");
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** Two handles on one store: what two processes sharing it would hold. */
const stores: Record<string, () => Promise<[DeviceTokenStore, DeviceTokenStore]>> = {
  memory: async () => {
    const one = memoryDeviceStore();
    return [one, one];
  },
  file: async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const file = path.join(dir, "devices.json");
    return [fileDeviceStore(file), fileDeviceStore(file)];
  },
  ...(redisUp
    ? {
        redis: async () => {
          const prefix = `t:${runId()}:`;
          const [a, b] = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
          cleanups.push(async () => {
            await dropKeys(a, prefix);
            a.disconnect();
            b.disconnect();
          });
          return [redisDeviceStore(a, { prefix }), redisDeviceStore(b, { prefix })];
        },
      }
    : {}),
};

function device(id: string, pairedBy?: string, username = "alice"): StoredDevice {
  return {
    device_id: id,
    username,
    name: id,
    created: 1_000,
    last_seen: 1_000,
    ...(pairedBy === undefined ? {} : { paired_by: pairedBy }),
    token_sha256: deviceTokenDigest(`token of ${id}`),
  };
}

describe.each(Object.keys(stores))("device store contract - %s", (kind) => {
  it("many adds at once from two handles: exactly the cap is stored, the rest are full", async () => {
    const [a, b] = await stores[kind]!();
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).add(device(`d${i}`), 5)),
    );
    expect(outcomes.filter((o) => o === "added")).toHaveLength(5);
    expect(outcomes.filter((o) => o === "full")).toHaveLength(7);
    expect(await a.list("alice")).toHaveLength(5);
    expect(await b.add(device("bobs", undefined, "bob"), 5)).toBe("added");
  });

  it("removing a device removes what it paired, transitively, and nothing else; a child of a removed device is refused", async () => {
    const [a, b] = await stores[kind]!();
    for (const d of [device("root"), device("child", "root"), device("grandchild", "child"), device("other")])
      expect(await a.add(d)).toBe("added");
    const gone = await b.remove("alice", "root");
    expect(gone.map((d) => d.device_id)).toEqual(["root", "child", "grandchild"]);
    expect(gone[1]!.paired_by).toBe("root");
    expect((await a.list("alice")).map((d) => d.device_id)).toEqual(["other"]);
    expect(await a.find(deviceTokenDigest("token of grandchild"))).toBeUndefined();
    expect(await a.add(device("late", "child"))).toBe("orphan");
    expect(await b.remove("alice", "root")).toEqual([]);
    expect(await b.remove("bob", "other")).toEqual([]);
  });

  it("a touch of a revoked device does not bring it back; a touch of a kept one records the use", async () => {
    const [a, b] = await stores[kind]!();
    await a.add(device("phone"));
    await a.add(device("laptop"));
    await Promise.all([b.remove("alice", "phone"), a.touch("phone", 5_000), a.touch("laptop", 5_000)]);
    await a.touch("phone", 6_000);
    expect(await b.find(deviceTokenDigest("token of phone"))).toBeUndefined();
    expect((await b.list("alice")).map((d) => [d.device_id, d.last_seen])).toEqual([["laptop", 5_000]]);
  });
});
