// Two gateways, as two processes would be wired (each its own PostgreSQL pool and Redis clients, one
// schema, one prefix), and one of them loses Redis for a moment: it keeps serving its own devices,
// and once Redis is back every device holds every stored frame.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { createGateway, type Gateway } from "chat-gateway";
import { redisBus, type RedisBus } from "chat-gateway/bus/redis";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { Client, type Frame } from "../gateway/harness.js";
import { DATABASE_URL, REDIS_URL, dropKeys, dropSchema, postgresAvailable, redisAvailable, runId } from "../fixtures/services.js";

const available = (await postgresAvailable("redis outage")) && (await redisAvailable("redis outage"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Node {
  name: string;
  redis: Redis;
  bus: RedisBus;
  gateway: Gateway;
  server: http.Server;
  transport: WebSocketTransport;
  url: string;
}

describe.skipIf(!available)("a gateway that loses Redis", () => {
  const id = runId();
  const schema = `t_${id}`;
  const prefix = `t:${id}:`;
  const nodes: Node[] = [];
  const devices: Client[] = [];

  async function node(name: string): Promise<Node> {
    const storage = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 3 });
    // A named connection, so the test can cut exactly this process's links; slow to come back, so
    // the outage lasts long enough to act in.
    const redis = new Redis(REDIS_URL, { connectionName: `outage-${name}-${id}`, retryStrategy: () => 800, enableOfflineQueue: false, lazyConnect: true });
    redis.on("error", () => undefined);
    await redis.connect();
    const bus = redisBus(redis, { prefix, storage, warn: () => undefined });
    await bus.ready();
    const gateway = createGateway({ storage, runtime: demoRuntime({ delayMs: 0 }), bus, logger: { info() {}, warn() {}, error() {} } });
    await gateway.start();
    const server = http.createServer();
    const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const n = { name, redis, bus, gateway, server, transport, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/gateway` };
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
    for (const n of nodes) {
      await n.gateway.close();
      await n.transport.close();
      n.server.close();
      n.redis.disconnect();
    }
    const admin = new Redis(REDIS_URL);
    await dropKeys(admin, prefix);
    admin.disconnect();
    await dropSchema(schema);
  });

  const stopOf = (c: Client, messageId: string) => c.frames.find((f: Frame) => f.type === "message.stop" && f.payload.reply_to === messageId);

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
    const stopOnB = await onB.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === onBTurn.payload.message_id, 5000, fromB);
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
    expect(onA.frames.find((f) => f.type === "message" && f.payload.message_id === onBTurn.payload.message_id)?.seq).toBe(onBTurn.seq);
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
