// Two gateways on one schema and one Redis prefix, each receiving from Redis only the frames of
// owners with a device connected to it; devices that connect while another process streams miss
// nothing and get nothing twice.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { tokenAuthenticator } from "chat-gateway";
import { Client, type Frame } from "../gateway/harness.js";
import { REDIS_URL, dropKeys, dropSchema, postgresAvailable, redisAvailable, runId } from "../fixtures/services.js";
import { startNode, stopNode, type Node } from "./in-process.js";
import { slowLink, type SlowLink } from "../fixtures/slow-link.js";

const available = (await postgresAvailable("redis routing")) && (await redisAvailable("redis routing"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seqsOf = (c: Client, from = 0) =>
  c.frames.slice(from).flatMap((f: Frame) => (typeof f.seq === "number" ? [f.seq] : []));

describe.skipIf(!available)("gateways that receive only what they serve", () => {
  const id = runId();
  const schema = `t_${id}`;
  const prefix = `t:${id}:`;
  const authenticator = tokenAuthenticator({ "t-alice": "alice", "t-bob": "bob" });
  const nodes: Node[] = [];
  let link: SlowLink;
  const devices: Client[] = [];
  const device = async (on: Node, token: string) => {
    const c = await Client.connect(on.url, { token });
    devices.push(c);
    return c;
  };

  beforeAll(async () => {
    for (const name of ["A", "B"])
      nodes.push(await startNode({ name, schema, prefix, connectionName: `routing-${name}-${id}`, authenticator }));
    // C reaches Redis over a link that takes 40 ms each way out: its subscriptions become active
    // well after its PostgreSQL reads, the window a frame could fall through.
    const { hostname, port } = new URL(REDIS_URL);
    link = await slowLink({ host: hostname, port: Number(port || 6379) }, 40);
    nodes.push(
      await startNode({
        name: "C",
        schema,
        prefix,
        connectionName: `routing-C-${id}`,
        redisUrl: link.url,
        authenticator,
      }),
    );
  });

  afterAll(async () => {
    for (const c of devices) await c.close().catch(() => undefined);
    for (const n of nodes) await stopNode(n);
    await link?.close();
    const admin = new Redis(REDIS_URL);
    await dropKeys(admin, prefix);
    admin.disconnect();
    await dropSchema(schema);
  });

  test("routing - a process with no device of an owner receives none of that owner's frames from Redis, and starts once a device connects", async () => {
    const [a, b] = nodes;
    const alice = await device(a, "t-alice");
    await device(b, "t-bob");
    // Bob's own first frames (his default channel) come back on B's subscription a moment later:
    // count from after they are in, so only what B was sent for alice could move the count.
    for (let i = 0; i < 100 && b.bus.stats.arrived < b.bus.stats.published; i++) await sleep(50);
    expect(b.bus.stats.arrived).toBe(b.bus.stats.published);
    const before = b.bus.stats.arrived;
    const turn = await alice.request("message.send", { chat_id: "default", text: "only A serves alice" });
    await alice.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === turn.payload.message_id);
    await sleep(200);
    // Alice's turn went through Redis (for processes that serve her), but B's link carried none of it.
    expect(a.bus.stats.published).toBeGreaterThan(3);
    expect(b.bus.stats.arrived).toBe(before);

    const aliceOnB = await device(b, "t-alice");
    const from = aliceOnB.frames.length;
    const second = await alice.request("message.send", { chat_id: "default", text: "now B serves her too" });
    await aliceOnB.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === second.payload.message_id,
      10_000,
      from,
    );
    expect(aliceOnB.frames.slice(from).some((f) => f.type === "message.start")).toBe(true);
    expect(b.bus.stats.arrived).toBeGreaterThan(before);

    // Her last device on B leaves: B unsubscribes, and her frames stop reaching it.
    await aliceOnB.close();
    await sleep(100);
    const after = b.bus.stats.arrived;
    const third = await alice.request("message.send", { chat_id: "default", text: "B is gone" });
    await alice.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === third.payload.message_id);
    await sleep(200);
    expect(b.bus.stats.arrived).toBe(after);
  });

  test("routing - devices connecting to a process with a slow Redis link while A stores frames get each once: live from the hello.ok cursor on, all of them with sync", async () => {
    const [a, , c] = nodes;
    let running = true;
    let last = 0;
    // A stores one frame after another for alice, published through Redis as each commits.
    const producer = (async () => {
      for (let i = 0; running && i < 5000; i++)
        last = await a.gateway.notify("alice", { kind: "generic", title: "tick", body: String(i) });
    })();
    const late: { client: Client; cursor: number; synced: boolean }[] = [];
    for (let i = 0; i < 10; i++) {
      await sleep(15);
      const client = await device(c, "t-alice");
      const cursor = client.frames.find((f) => f.type === "hello.ok")!.payload.cursor as number;
      const synced = i % 2 === 1;
      if (synced) await client.request("sync", { cursor: 0 }, 10_000);
      late.push({ client, cursor, synced });
    }
    running = false;
    await producer;
    expect(last).toBeGreaterThan(late.at(-1)!.cursor);
    for (const { client } of late) await client.waitFor((f) => f.seq === last, 10_000);
    // Every stored frame of alice, as a device that syncs from nothing after the fact gets them.
    const reference = await device(a, "t-alice");
    await reference.request("sync", { cursor: 0 }, 10_000);
    const all = seqsOf(reference).filter((s) => s <= last);
    expect(all.at(-1)).toBe(last);
    await sleep(100);
    for (const { client, cursor, synced } of late) {
      const got = seqsOf(client);
      expect(new Set(got).size).toBe(got.length);
      if (synced) expect([...got].sort((x, y) => x - y)).toEqual(all);
      else expect(got).toEqual(all.filter((s) => s > cursor));
    }
  });
});
