// Two gateways, as two processes would be wired (each its own PostgreSQL pool and Redis clients, one
// schema, one prefix), and one of them loses Redis for a moment: it keeps serving its own devices,
// and once Redis is back every device holds every stored frame.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { Client, type Frame } from "../gateway/harness.js";
import { REDIS_URL, dropKeys, dropSchema, postgresAvailable, redisAvailable, runId } from "../fixtures/services.js";
import { startNode, stopNode, type Node } from "./in-process.js";

const available = (await postgresAvailable("redis outage")) && (await redisAvailable("redis outage"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!available)("a gateway that loses Redis", () => {
  const id = runId();
  const schema = `t_${id}`;
  const prefix = `t:${id}:`;
  const nodes: Node[] = [];
  const devices: Client[] = [];

  async function node(name: string): Promise<Node> {
    // Named connections, so the test can cut exactly this process's links; slow to come back, so
    // the outage lasts long enough to act in.
    const n = await startNode({
      name,
      schema,
      prefix,
      connectionName: `outage-${name}-${id}`,
      redis: { retryStrategy: () => 800, enableOfflineQueue: false },
    });
    nodes.push(n);
    return n;
  }

  /** Closes every Redis connection of one node, as a network failure would. */
  async function cut(n: Node): Promise<void> {
    const admin = new Redis(REDIS_URL);
    try {
      const list = (await admin.client("LIST")) as string;
      const ids = list
        .split("\n")
        .filter((line) => line.includes(` name=outage-${n.name}-${id} `))
        .map((line) => /\bid=(\d+)/.exec(line)![1]);
      expect(ids.length).toBe(2);
      for (const clientId of ids) await admin.client("KILL", "ID", clientId);
    } finally {
      admin.disconnect();
    }
    const deadline = Date.now() + 2000;
    while (n.redis.status === "ready" && Date.now() < deadline) await sleep(5);
    expect(n.redis.status).not.toBe("ready");
  }

  beforeAll(async () => {
    await node("A");
    await node("B");
  });

  afterAll(async () => {
    for (const c of devices) await c.close().catch(() => undefined);
    for (const n of nodes) await stopNode(n);
    const admin = new Redis(REDIS_URL);
    await dropKeys(admin, prefix);
    admin.disconnect();
    await dropSchema(schema);
  });

  const stopOf = (c: Client, messageId: string) =>
    c.frames.find((f: Frame) => f.type === "message.stop" && f.payload.reply_to === messageId);

  test("outage - the cut-off process serves its own devices, and afterwards every device holds every stored frame", async () => {
    const [a, b] = nodes;
    const onA = await Client.connect(a.url);
    const onB = await Client.connect(b.url);
    devices.push(onA, onB);
    // Linked: a turn on A reaches B.
    const first = await onA.request("message.send", { chat_id: "default", text: "before" });
    await onB.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === first.payload.message_id, 5000);

    await cut(b);
    // B's own device still gets B's whole turn, live frames included.
    const fromB = onB.frames.length;
    const onBTurn = await onB.request("message.send", { chat_id: "default", text: "during the outage, on B" });
    const stopOnB = await onB.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === onBTurn.payload.message_id,
      5000,
      fromB,
    );
    expect(onB.frames.slice(fromB).some((f) => f.type === "message.start")).toBe(true);
    // A turn on A meanwhile: B's device cannot hear it yet.
    const onATurn = await onA.request("message.send", { chat_id: "default", text: "during the outage, on A" });
    await onA.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === onATurn.payload.message_id, 5000);
    expect(b.redis.status).not.toBe("ready");
    expect(stopOf(onB, onATurn.payload.message_id as string)).toBeUndefined();
    expect(stopOf(onA, onBTurn.payload.message_id as string)).toBeUndefined();

    // Redis is back for B: it re-sends what it kept and reads back what it missed.
    await onA.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === onBTurn.payload.message_id, 10_000);
    await onB.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === onATurn.payload.message_id, 10_000);
    expect(
      onA.frames.find((f) => f.type === "message" && f.payload.message_id === onBTurn.payload.message_id)?.seq,
    ).toBe(onBTurn.seq);
    expect(stopOf(onA, onBTurn.payload.message_id as string)!.seq).toBe(stopOnB.seq);
    // Each stored frame arrived once on each device.
    await sleep(200);
    for (const c of [onA, onB]) {
      const seqs = c.frames.filter((f) => typeof f.seq === "number").map((f) => f.seq!);
      expect(new Set(seqs).size).toBe(seqs.length);
    }
    expect(b.bus.stats.recovered).toBeGreaterThanOrEqual(4);
  });
});
