// The devices of a new owner (or of every owner after a restart) say hello together: the gateway
// looks for the owner's default channel, and makes it, once for all of them, and a look that fails
// fails the hellos waiting on it without keeping the next hello from trying again.
import { afterEach, expect, test } from "vitest";
import type { Authenticator } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";

let harness: Harness | undefined;
let clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await harness?.close();
  clients = [];
  harness = undefined;
});

/** A memory storage that counts the calls of the default channel's look-up, and can fail it. */
interface Lookups {
  /** Look-ups still to fail. */
  failing: number;
  /** Every look-up waits for this first. */
  until?: Promise<void>;
}

/** A memory storage that counts the calls of the default channel's look-up, and can hold or fail it. */
function countingStorage(): { storage: Storage; calls: Map<string, number>; lookups: Lookups } {
  const inner = memoryStorage();
  const calls = new Map<string, number>();
  const lookups: Lookups = { failing: 0 };
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  const storage: Storage = Object.create(inner);
  storage.getChannel = async (owner, chatId) => {
    count("getChannel");
    await lookups.until;
    if (lookups.failing > 0) {
      lookups.failing--;
      throw new Error("storage unavailable");
    }
    return inner.getChannel(owner, chatId);
  };
  storage.listChannels = async (owner) => {
    count("listChannels");
    return inner.listChannels(owner);
  };
  storage.commit = async (owner, change) => {
    if (change.channels?.length) count("commit with channels");
    return inner.commit(owner, change);
  };
  return { storage, calls, lookups };
}

/**
 * An authenticator of one owner that releases the held look-ups once `count` hellos have asked it
 * and, a macrotask later, reached the look-up (nothing between the two waits on I/O): every one of
 * them is in the handshake at once, as after a restart.
 */
function allAtOnce(lookups: Lookups, count: number): Authenticator {
  let release!: () => void;
  lookups.until = new Promise<void>((resolve) => (release = resolve));
  let asked = 0;
  return {
    async authenticate() {
      if (++asked === count) setImmediate(release);
      return { owner: "o1", user: null };
    },
  };
}

const helloAll = (url: string, count: number, prefix: string) =>
  Promise.all(Array.from({ length: count }, (_, i) => Client.connect(url, { device_id: `${prefix}-${i}` })));

test("30 first hellos of a new owner at once: one look for the default channel and one commit making it", async () => {
  const { storage, calls, lookups } = countingStorage();
  const authenticator = allAtOnce(lookups, 30);
  harness = await startGateway({ storage, authenticator, maxConnectionsPerOwner: 100, maxConnectionsPerIp: 200 });
  clients = await helloAll(harness.url, 30, "first");
  expect(Object.fromEntries(calls)).toEqual({ getChannel: 1, listChannels: 1, "commit with channels": 1 });
  const channels = (await clients[0].request("channel.list", {})).payload.channels as Array<Record<string, unknown>>;
  expect(channels.map((c) => [c.chat_id, c.is_default])).toEqual([["default", true]]);
}, 30_000);

test("a look-up that fails fails the hellos waiting on it, and the next hello looks again and succeeds", async () => {
  const { storage, calls, lookups } = countingStorage();
  const authenticator = allAtOnce(lookups, 5);
  harness = await startGateway({ storage, authenticator, maxConnectionsPerOwner: 100, maxConnectionsPerIp: 200 });
  lookups.failing = 1;
  const url = harness.url;
  const attempts = await Promise.allSettled(
    Array.from({ length: 5 }, (_, i) => Client.connect(url, { device_id: `x-${i}` })),
  );
  expect(attempts.map((a) => a.status)).toEqual(Array(5).fill("rejected"));
  expect(calls.get("getChannel")).toBe(1);
  clients = [await Client.connect(url, { device_id: "after" })];
  expect(calls.get("getChannel")).toBe(2);
  expect(calls.get("commit with channels")).toBe(1);
}, 30_000);
