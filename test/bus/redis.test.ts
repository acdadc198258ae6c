import { afterAll, afterEach, describe, expect, test } from "vitest";
import { Redis, type RedisOptions } from "ioredis";
import type { BusMessage, OutgoingFrame } from "chat-gateway";
import { SUBSCRIBE_WAIT_MS, redisBus, type RedisBus } from "chat-gateway/bus/redis";
import { memoryStorage } from "chat-gateway/storage/memory";
import { recordingLogger } from "../fixtures/recording-logger.js";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";
import { slowLink } from "../fixtures/slow-link.js";

const available = await redisAvailable("redis bus");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(10);
  }
}

/**
 * A recording logger, and a promise settled as the bus reports its subscription lost: a test that
 * awaits it goes on within that turn of the event loop, before any reconnection timer can fire.
 */
function lossLogger() {
  const logger = recordingLogger();
  let lost!: () => void;
  const linkLost = new Promise<void>((resolve) => (lost = resolve));
  const record = logger.warn;
  logger.warn = (message) => {
    record(message);
    if (message.startsWith("lost the Redis subscription")) lost();
  };
  return { logger, linkLost };
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
  const frame = (i: number, seq?: number): OutgoingFrame => ({
    type: "message.update",
    payload: { i },
    ...(seq ? { seq } : {}),
  });

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
    for (let i = 0; i < 200; i++)
      a.publish({ owner: "alice", frame: frame(i), ...(i === 0 ? { except: "conn-1" } : {}) });
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

  for (const channels of ["owner", "sharded", "shared"] as const) {
    test(`bus - ${channels} channels: with storage, stored frames missed while the subscription was down are read back once it is back`, async () => {
      const prefix = `t:${runId()}:`;
      const name = `bus-b-${runId()}`;
      const storage = memoryStorage();
      const a = await bus(client(), { prefix, channels });
      const { logger, linkLost } = lossLogger();
      const b = await bus(client({ connectionName: name, retryStrategy: () => 400 }), {
        prefix,
        storage,
        channels,
        logger,
      });
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
        .filter((line) => line.includes(` name=${name} `) && / cmd=([ps]?subscribe|ping)/.test(line))
        .map((line) => /\bid=(\d+)/.exec(line)![1]);
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) await admin.client("KILL", "ID", id);
      await linkLost;
      await store(2);
      await store(3);
      a.publish({ owner: "alice", frame: frame(99) });
      await until(() => onB.length >= 3);
      await sleep(300);
      expect(onB.map((m) => m.frame.seq)).toEqual([1, 2, 3]);
      expect(b.stats.recovered).toBe(2);
      // The operator learns of the outage and its end through the logger the bus was given.
      expect(logger.lines.warn).toEqual(
        expect.arrayContaining([expect.stringMatching(/lost the Redis subscription/), "Redis subscription is back"]),
      );
      expect(logger.lines.error).toEqual([]);
    });
  }

  test("bus - an owner's first subscriber while the subscription is down is not held up, and gets what was stored meanwhile once it is back", async () => {
    const prefix = `t:${runId()}:`;
    const name = `bus-late-${runId()}`;
    const storage = memoryStorage();
    const a = await bus(client(), { prefix });
    const { logger, linkLost } = lossLogger();
    const b = await bus(client({ connectionName: name, retryStrategy: () => 600 }), { prefix, storage, logger });
    const store = async (i: number) => {
      const { seqs } = await storage.commit("carol", { outbox: [{ type: "message", payload: { i } }] });
      a.publish({ owner: "carol", frame: { type: "message", payload: { i }, seq: seqs[0] } });
    };
    await store(1);
    const admin = client();
    const ids = ((await admin.client("LIST")) as string)
      .split("\n")
      .filter((line) => line.includes(` name=${name} `) && / cmd=ping/.test(line))
      .map((line) => /\bid=(\d+)/.exec(line)![1]);
    expect(ids).toHaveLength(1);
    await admin.client("KILL", "ID", ids[0]);
    // Subscribes within the same turn of the event loop as the loss: the link (back 600 ms later
    // on a timer) is certainly still down, however slow the machine.
    await linkLost;
    const onB: BusMessage[] = [];
    b.subscribe("carol", (m) => onB.push(m));
    await b.ready("carol");
    // Not held up: ready() resolved before the link came back (and before SUBSCRIBE_WAIT_MS ran out).
    expect(logger.lines.warn).toEqual([expect.stringMatching(/^lost the Redis subscription/)]);
    await store(2);
    await store(3);
    await until(() => onB.length >= 2);
    await sleep(200);
    // Frame 1 was stored before carol's device came: not this subscriber's to catch up on.
    expect(onB.map((m) => m.frame.seq)).toEqual([2, 3]);
    expect(logger.lines.warn.slice(1)).toEqual(["Redis subscription is back"]);
  });

  test("bus - an owner with no frame yet when the subscription drops still gets what was stored meanwhile", async () => {
    const prefix = `t:${runId()}:`;
    const name = `bus-fresh-${runId()}`;
    const storage = memoryStorage();
    await storage.commit("dave", { outbox: [{ type: "message", payload: { i: 0 } }] });
    const a = await bus(client(), { prefix });
    const { logger, linkLost } = lossLogger();
    const b = await bus(client({ connectionName: name, retryStrategy: () => 600 }), { prefix, storage, logger });
    const onB: BusMessage[] = [];
    b.subscribe("dave", (m) => onB.push(m));
    await b.ready("dave");
    const admin = client();
    const ids = ((await admin.client("LIST")) as string)
      .split("\n")
      .filter((line) => line.includes(` name=${name} `) && / cmd=subscribe/.test(line))
      .map((line) => /\bid=(\d+)/.exec(line)![1]);
    expect(ids).toHaveLength(1);
    await admin.client("KILL", "ID", ids[0]);
    await linkLost;
    for (const i of [1, 2]) {
      const { seqs } = await storage.commit("dave", { outbox: [{ type: "message", payload: { i } }] });
      a.publish({ owner: "dave", frame: { type: "message", payload: { i }, seq: seqs[0] } });
    }
    await until(() => onB.length >= 2);
    await sleep(200);
    expect(onB.map((m) => m.frame.payload.i)).toEqual([1, 2]);
  });

  test("bus - ready(owner) waits at most SUBSCRIBE_WAIT_MS for a subscription Redis is slow to acknowledge, and says so", async () => {
    const { hostname, port } = new URL(REDIS_URL);
    const link = await slowLink({ host: hostname, port: Number(port || 6379) }, 0);
    try {
      const logger = recordingLogger();
      const viaLink = new Redis(link.url);
      viaLink.on("error", () => undefined);
      clients.push(viaLink);
      const slow = await bus(viaLink, { prefix: `t:${runId()}:`, logger });
      // Held far past the test's timeout: only ready()'s own wait can end it.
      link.setDelay(60_000);
      slow.subscribe("alice", () => undefined);
      const t0 = Date.now();
      await slow.ready("alice");
      const waited = Date.now() - t0;
      expect(waited).toBeGreaterThanOrEqual(SUBSCRIBE_WAIT_MS - 50);
      // It gave up waiting while the link still held the SUBSCRIBE back, and said so.
      expect(link.held()).toBeGreaterThan(0);
      expect(logger.lines.warn.some((w) => w.includes("alice") && w.includes("not acknowledged"))).toBe(true);
      link.release();
    } finally {
      await Promise.all(buses.splice(0).map((b) => b.close?.()));
      for (const c of clients) if (c.options.port === Number(new URL(link.url).port)) c.disconnect();
      await link.close();
    }
  }, 15_000);

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

  /** The subscriber connection of a bus whose client was named `name`, as Redis lists it. */
  async function subscriberOf(name: string): Promise<{ sub: number; ssub: number }> {
    const line = ((await client().client("LIST")) as string)
      .split("\n")
      .find((l) => l.includes(` name=${name} `) && !/ sub=0 psub=0 ssub=0 /.test(l));
    if (!line) return { sub: 0, ssub: 0 };
    return { sub: Number(/ sub=(\d+)/.exec(line)![1]), ssub: Number(/ ssub=(\d+)/.exec(line)![1]) };
  }

  for (const channels of ["owner", "sharded"] as const) {
    test(`bus - ${channels} channels: a process receives from Redis only the frames of owners it has a subscriber for`, async () => {
      const prefix = `t:${runId()}:`;
      const names = ["a", "b", "c", "d"].map((n) => `bus-${n}-${runId()}`);
      const [a, b, c, d] = await Promise.all(
        names.map((connectionName) => bus(client({ connectionName }), { prefix, channels })),
      );
      const onB: BusMessage[] = [];
      const onC: BusMessage[] = [];
      b.subscribe("alice", (m) => onB.push(m));
      c.subscribe("bob", (m) => onC.push(m));
      await Promise.all([b.ready(), c.ready()]);
      for (let i = 0; i < 100; i++) {
        a.publish({ owner: "alice", frame: frame(i) });
        a.publish({ owner: "bob", frame: frame(i) });
      }
      await until(() => onB.length === 100 && onC.length === 100);
      await sleep(100);
      expect(onB.map((m) => m.frame.payload.i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      // What each connection carried: its owner's frames and nothing else.
      expect([a, b, c, d].map((x) => x.stats.arrived)).toEqual([0, 100, 100, 0]);
      // A 16-character process id and the owner on the first line, the frame on the second.
      const header = JSON.stringify(["0".repeat(16), "alice"]).length + 1;
      expect(b.stats.arrivedBytes).toBe(onB.reduce((sum, m) => sum + header + JSON.stringify(m.frame).length, 0));
      // Redis's own view: one channel on B's and C's subscriber connections, none on D's.
      const key = channels === "sharded" ? "ssub" : "sub";
      expect((await subscriberOf(names[1]))[key]).toBe(1);
      expect((await subscriberOf(names[3]))[key]).toBe(0);
    });
  }

  test("bus - shared channel (as before per-owner channels): every process receives every owner's frames", async () => {
    const prefix = `t:${runId()}:`;
    const [a, b, d] = await Promise.all([0, 1, 2].map(() => bus(client(), { prefix, channels: "shared" })));
    const onB: BusMessage[] = [];
    b.subscribe("alice", (m) => onB.push(m));
    for (let i = 0; i < 50; i++) {
      a.publish({ owner: "alice", frame: frame(i) });
      a.publish({ owner: "bob", frame: frame(i) });
    }
    await until(() => onB.length === 50 && d.stats.arrived === 100);
    expect(b.stats.arrived).toBe(100);
    expect(d.stats.received).toBe(0);
  });

  test("bus - devices arriving in one turn subscribe in one command; leaving unsubscribes; coming and going in one turn sends nothing", async () => {
    const prefix = `t:${runId()}:`;
    const name = `bus-churn-${runId()}`;
    const a = await bus(client({ connectionName: name }), { prefix });
    const before = a.stats.commands;
    const offs = Array.from({ length: 300 }, (_, i) => a.subscribe(`owner-${i}`, () => undefined));
    await a.ready();
    // One SUBSCRIBE for the 300 channels, and a ZADD + PEXPIRE per owner for presence.
    expect(a.stats.commands - before).toBe(1 + 600);
    expect(a.stats.channels).toBe(300);
    expect((await subscriberOf(name)).sub).toBe(300);
    const admin = client();
    const [, subscribers] = (await admin.pubsub("NUMSUB", `${prefix}bus:{owner-7}`)) as [string, number];
    expect(subscribers).toBe(1);

    for (const off of offs.slice(0, 200)) off();
    // ready() covers unsubscriptions too: once it resolves, Redis has dropped the channels.
    await a.ready();
    expect(a.stats.channels).toBe(100);
    expect((await subscriberOf(name)).sub).toBe(100);
    const quiet = a.stats.commands;
    a.subscribe("brief", () => undefined)();
    await sleep(20);
    expect(a.stats.commands).toBe(quiet);
    expect(a.stats.channels).toBe(100);
  });

  test("bus - a client that is not ioredis is refused at construction", () => {
    expect(() => redisBus({} as Redis)).toThrow(TypeError);
    expect(() => redisBus(client(), { maxPending: -1 })).toThrow(TypeError);
    expect(() => redisBus(client(), { logger: { warn() {} } as never })).toThrow(
      /redisBus: logger must be an object with info, warn and error methods \(missing info, error\)/,
    );
    expect(() => redisBus(client(), { warn: 1 as never })).toThrow(/redisBus: warn must be a function/);
  });
});
