import { afterAll, afterEach, describe, expect, test } from "vitest";
import { Redis, type RedisOptions } from "ioredis";
import type { BusMessage, OutgoingFrame } from "chat-gateway";
import { redisBus, type RedisBus } from "chat-gateway/bus/redis";
import { memoryStorage } from "chat-gateway/storage/memory";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis bus");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(10);
  }
}

describe.skipIf(!available)("redisBus", () => {
  const clients: Redis[] = [];
  const buses: RedisBus[] = [];
  function client(options: RedisOptions = {}): Redis {
    const redis = new Redis(REDIS_URL, options);
    redis.on("error", () => undefined);
    clients.push(redis);
    return redis;
  }
  const prefixes = new Set<string>();
  async function bus(redis: Redis, options: Parameters<typeof redisBus>[1] = {}): Promise<RedisBus> {
    if (options.prefix) prefixes.add(options.prefix);
    const b = redisBus(redis, { warn: () => undefined, ...options });
    buses.push(b);
    await b.ready();
    return b;
  }
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close?.()));
  });
  afterAll(async () => {
    const admin = client();
    for (const prefix of prefixes) await dropKeys(admin, prefix);
    for (const c of clients) c.disconnect();
  });
  const frame = (i: number, seq?: number): OutgoingFrame => ({ type: "message.update", payload: { i }, ...(seq ? { seq } : {}) });

  test("bus - frames reach the owner's subscribers in every process, in order, once each; except applies in the publishing process only", async () => {
    const prefix = `t:${runId()}:`;
    const a = await bus(client(), { prefix });
    const b = await bus(client(), { prefix });
    const onA: BusMessage[] = [];
    const onB: BusMessage[] = [];
    const bobOnB: BusMessage[] = [];
    a.subscribe("alice", (m) => onA.push(m));
    b.subscribe("alice", (m) => onB.push(m));
    b.subscribe("bob", (m) => bobOnB.push(m));
    // Subscribing to an owner's channel takes a round trip to Redis.
    await Promise.all([a.ready(), b.ready()]);
    for (let i = 0; i < 200; i++) a.publish({ owner: "alice", frame: frame(i), ...(i === 0 ? { except: "conn-1" } : {}) });
    // Delivery in the publishing process is synchronous.
    expect(onA).toHaveLength(200);
    await until(() => onB.length === 200);
    expect(onB.map((m) => m.frame.payload.i)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    // `except` names a connection of the publishing process only (ids are unique per process).
    expect(onA[0]).toEqual({ owner: "alice", frame: frame(0), except: "conn-1" });
    expect(onB[0]).toEqual({ owner: "alice", frame: frame(0) });
    expect(onB[1]).toEqual({ owner: "alice", frame: frame(1) });
    await sleep(50);
    expect(onA).toHaveLength(200);
    expect(bobOnB).toEqual([]);
    expect(a.stats.published).toBe(200);
    expect(b.stats.received).toBe(200);
  });

  test("bus - processes with another prefix do not hear each other; unsubscribe stops delivery", async () => {
    const prefix = `t:${runId()}:`;
    const a = await bus(client(), { prefix });
    const b = await bus(client(), { prefix: `t:${runId()}:` });
    const c = await bus(client(), { prefix });
    const onB: BusMessage[] = [];
    const onC: BusMessage[] = [];
    b.subscribe("alice", (m) => onB.push(m));
    const off = c.subscribe("alice", (m) => onC.push(m));
    await Promise.all([b.ready(), c.ready()]);
    a.publish({ owner: "alice", frame: frame(1) });
    await until(() => onC.length === 1);
    off();
    a.publish({ owner: "alice", frame: frame(2) });
    await sleep(150);
    expect(onB).toEqual([]);
    expect(onC.map((m) => m.frame.payload.i)).toEqual([1]);
  });

  test("bus - while Redis is unreachable local delivery goes on, stored frames are re-sent when it is back, live ones dropped", async () => {
    const prefix = `t:${runId()}:`;
    const pub = client({ retryStrategy: () => 300 });
    const a = await bus(pub, { prefix });
    const b = await bus(client(), { prefix });
    const onA: BusMessage[] = [];
    const onB: BusMessage[] = [];
    a.subscribe("alice", (m) => onA.push(m));
    b.subscribe("alice", (m) => onB.push(m));
    await b.ready("alice");
    pub.disconnect(true);
    await until(() => pub.status !== "ready");
    a.publish({ owner: "alice", frame: frame(1, 1) });
    a.publish({ owner: "alice", frame: frame(2) });
    a.publish({ owner: "alice", frame: frame(3, 2) });
    expect(onA.map((m) => m.frame.payload.i)).toEqual([1, 2, 3]);
    await until(() => onB.length === 2);
    expect(onB.map((m) => m.frame.seq)).toEqual([1, 2]);
    expect(a.stats.dropped).toBe(1);
    expect(a.stats.recovered).toBe(2);
  });

  test("bus - with storage, stored frames missed while the subscription was down are read back once it is back", async () => {
    const prefix = `t:${runId()}:`;
    const name = `bus-b-${runId()}`;
    const storage = memoryStorage();
    const a = await bus(client(), { prefix });
    const b = await bus(client({ connectionName: name, retryStrategy: () => 400 }), { prefix, storage });
    const onB: BusMessage[] = [];
    b.subscribe("alice", (m) => onB.push(m));
    await b.ready("alice");
    const store = async (i: number) => {
      const { seqs } = await storage.commit("alice", { outbox: [{ type: "message", payload: { i } }] });
      a.publish({ owner: "alice", frame: { type: "message", payload: { i }, seq: seqs[0] } });
    };
    await store(1);
    await until(() => onB.length === 1);
    // Cut only B's subscription (by its connection name), as a network failure would.
    const admin = client();
    const list = (await admin.client("LIST")) as string;
    const ids = list
      .split("\n")
      .filter((line) => line.includes(` name=${name} `) && / cmd=(p?subscribe|ping)/.test(line))
      .map((line) => /\bid=(\d+)/.exec(line)![1]);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) await admin.client("KILL", "ID", id);
    await sleep(50);
    await store(2);
    await store(3);
    a.publish({ owner: "alice", frame: frame(99) });
    await until(() => onB.length >= 3);
    await sleep(300);
    expect(onB.map((m) => m.frame.seq)).toEqual([1, 2, 3]);
    expect(b.stats.recovered).toBe(2);
  });

  test("bus - connected() sees an owner's devices in any process, and forgets them when they leave", async () => {
    const prefix = `t:${runId()}:`;
    const a = await bus(client(), { prefix });
    const b = await bus(client(), { prefix });
    expect(await a.connected("alice")).toBe(false);
    const off = b.subscribe("alice", () => undefined);
    await sleep(50);
    expect(await a.connected("alice")).toBe(true);
    expect(await b.connected("alice")).toBe(true);
    expect(await a.connected("bob")).toBe(false);
    off();
    await sleep(50);
    expect(await a.connected("alice")).toBe(false);
    b.subscribe("carol", () => undefined);
    await sleep(50);
    expect(await a.connected("carol")).toBe(true);
    // A process that closes (or whose entry lapses) no longer counts.
    await b.close?.();
    expect(await a.connected("carol")).toBe(false);
  });

  test("bus - a client that is not ioredis is refused at construction", () => {
    expect(() => redisBus({} as Redis)).toThrow(TypeError);
    expect(() => redisBus(client(), { maxPending: -1 })).toThrow(TypeError);
  });
});
