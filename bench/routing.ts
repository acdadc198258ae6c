/**
 * Routing part of bench/multiprocess.ts: what each gateway process receives from Redis.
 *
 * Traffic: `owners` owners with 2 devices each, spread over `processes` gateways in this process
 * (each with its own PostgreSQL pool and Redis connections, as separate processes would have; one
 * schema, one prefix), first device of owner i on gateway i mod n, second on gateway i+1 mod n. Each
 * owner's first device asks for a streamed answer; once both devices hold it, the next batch goes.
 * Measured per gateway: messages and bytes that arrived on its Redis subscription during the turns
 * (`RedisBus.stats`), against its share: the messages of the owners it serves, as a pattern
 * subscriber in this process counted them per owner. Run once per channel mode, in the same run.
 *
 * Churn, the other routing measurement, is bench/routing-churn.ts; both are printed by
 * bench/routing-report.ts.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { WebSocket } from "ws";
import { createGateway, tokenAuthenticator, type Gateway } from "chat-gateway";
import { redisBus, type ChannelMode, type RedisBus, type RedisBusStats } from "chat-gateway/bus/redis";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";

export interface RoutingSetup {
  databaseUrl: string;
  redisUrl: string;
  owners: number;
  processes: number;
  /** Unique per run; schemas `<id>_<mode>`, prefixes `bench:<id>:<mode>:`. */
  id: string;
  /** Characters of each question; the demo answer echoes it in 10-character deltas, 10 ms apart. */
  questionChars: number;
}

export interface ProcessTraffic {
  process: number;
  ownersServed: number;
  shareMessages: number;
  shareBytes: number;
  arrivedMessages: number;
  arrivedBytes: number;
}

export interface RoutingResult {
  mode: ChannelMode;
  totalMessages: number;
  totalBytes: number;
  connectMs: number;
  turnsMs: number;
  disconnectMs: number;
  /** Bus commands (subscriptions, presence) over all gateways while the devices connected and left. */
  connectCommands: number;
  disconnectCommands: number;
  /** Storage calls by method, over all gateways, while the devices connected and during the turns. */
  storageOnConnect: Record<string, number>;
  storageOnTurns: Record<string, number>;
  perProcess: ProcessTraffic[];
}

/** Counts calls per method name into `calls`. */
function counted<T extends object>(target: T, calls: Map<string, number>): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      const value: unknown = Reflect.get(t, key, receiver);
      if (typeof value !== "function" || typeof key !== "string") return value;
      return (...args: unknown[]) => {
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}

interface Proc {
  redis: Redis;
  bus: RedisBus;
  gateway: Gateway;
  server: http.Server;
  transport: WebSocketTransport;
  url: string;
}

const LOTS = 1_000_000;
const UNCAPPED = {
  maxConnectionsPerIp: LOTS,
  maxHellosInFlight: LOTS,
  connectRateLimit: { perSecond: LOTS, burst: LOTS },
  rateLimitPerAddress: { perSecond: LOTS, burst: LOTS },
} as const;

async function startProc(
  setup: RoutingSetup,
  mode: ChannelMode,
  schema: string,
  prefix: string,
  tokens: Record<string, string>,
  calls: Map<string, number>,
): Promise<Proc> {
  const storage = counted(postgresStorage({ connectionString: setup.databaseUrl, schema, poolSize: 5 }), calls);
  const redis = new Redis(setup.redisUrl);
  const bus = redisBus(redis, { prefix, storage, channels: mode, warn: () => undefined });
  await bus.ready();
  const gateway = createGateway({
    storage,
    // Paced like a model: the 50 ms update interval then sends several updates per answer.
    runtime: demoRuntime({ delayMs: 10, chunkChars: 10 }),
    bus,
    authenticator: tokenAuthenticator(tokens),
    logger: { info() {}, warn() {}, error() {} },
    // Every device connects from 127.0.0.1: the per-address and hello caps meant for the internet
    // would refuse most of them (close 4429 or 1013) and measure the refusals instead.
    ...UNCAPPED,
  });
  await gateway.start();
  const server = http.createServer();
  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    redis,
    bus,
    gateway,
    server,
    transport,
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/gateway`,
  };
}

async function stopProc(p: Proc): Promise<void> {
  await p.gateway.close();
  await p.transport.close();
  p.server.close();
  p.redis.disconnect();
}

interface Device {
  ws: WebSocket;
  stops: number;
  /** Resolves when `stops` reaches `n`. */
  stopsReach(n: number): Promise<void>;
}

/**
 * A device that has completed its hello. A socket that closes first, before hello.ok or before the
 * answers a turn waits for, fails the bench with its close code rather than leaving it waiting.
 */
async function connect(url: string, token: string, deviceId: string): Promise<Device> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  let waiter: { n: number; resolve: () => void; reject: (error: Error) => void } | undefined;
  let closed: Error | undefined;
  let hello!: { resolve: () => void; reject: (error: Error) => void };
  const helloOk = new Promise<void>((resolve, reject) => (hello = { resolve, reject }));
  helloOk.catch(() => undefined); // awaited below, once the socket is open
  const device: Device = {
    ws,
    stops: 0,
    stopsReach(n) {
      if (device.stops >= n) return Promise.resolve();
      if (closed) return Promise.reject(closed);
      return new Promise((resolve, reject) => (waiter = { n, resolve, reject }));
    },
  };
  ws.on("message", (data) => {
    const text = String(data);
    if (text.startsWith('{"type":"hello.ok"')) hello.resolve();
    else if (text.startsWith('{"type":"message.stop"')) {
      device.stops++;
      if (waiter && device.stops >= waiter.n) waiter.resolve();
    }
  });
  ws.on("close", (code, reason) => {
    closed = new Error(
      `device ${deviceId}: socket closed (${code} ${String(reason)}) before the bench was done with it`,
    );
    hello.reject(closed);
    waiter?.reject(closed);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token, device_id: deviceId, device_name: "bench" } }));
  await helloOk;
  return device;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

type Count = { messages: number; bytes: number };

/** Counts every bus message of a prefix, per owner, from its own pattern subscription. */
async function trafficCounter(redisUrl: string, prefix: string, mode: ChannelMode) {
  const sub = new Redis(redisUrl);
  const perOwner = new Map<string, Count>();
  const count = (data: Buffer) => {
    const owner = (JSON.parse(data.subarray(0, data.indexOf(10)).toString()) as [string, string])[1];
    const entry = perOwner.get(owner) ?? { messages: 0, bytes: 0 };
    entry.messages++;
    entry.bytes += data.length;
    perOwner.set(owner, entry);
  };
  // Sharded channels are not seen by PSUBSCRIBE: listen to each owner's channel instead.
  if (mode === "sharded") sub.on("smessageBuffer", (_c: Buffer, data: Buffer) => count(data));
  else sub.on("pmessageBuffer", (_p: Buffer, _c: Buffer, data: Buffer) => count(data));
  if (mode !== "sharded") await sub.psubscribe(`${prefix}bus*`);
  return {
    perOwner,
    async watch(owners: string[]) {
      if (mode === "sharded") for (const owner of owners) await sub.ssubscribe(`${prefix}bus:{${owner}}`);
    },
    close: () => sub.disconnect(),
  };
}

/** Each pair's first device asks once; resolves when both devices of every pair hold the answer. */
async function turns(devices: Device[][], question: string): Promise<void> {
  for (let i = 0; i < devices.length; i += 100) {
    await Promise.all(
      devices.slice(i, i + 100).map(async ([first, second]) => {
        first.ws.send(
          JSON.stringify({ type: "message.send", id: "s", payload: { chat_id: "default", text: question } }),
        );
        await Promise.all([first.stopsReach(1), second.stopsReach(1)]);
      }),
    );
  }
}

/** A process's share (the messages of the owners it serves) against what arrived on its subscription. */
function traffic(
  n: number,
  served: string[],
  perOwner: Map<string, Count>,
  now: RedisBusStats,
  before: RedisBusStats,
): ProcessTraffic {
  const share = served.map((o) => perOwner.get(o) ?? { messages: 0, bytes: 0 });
  return {
    process: n + 1,
    ownersServed: served.length,
    shareMessages: sum(share.map((s) => s.messages)),
    shareBytes: sum(share.map((s) => s.bytes)),
    arrivedMessages: now.arrived - before.arrived,
    arrivedBytes: now.arrivedBytes - before.arrivedBytes,
  };
}

/** Both devices of every owner, 50 owners at a time; resolves once every subscription is in effect. */
async function connectAll(owners: string[], placement: number[][], procs: Proc[]): Promise<Device[][]> {
  const devices: Device[][] = [];
  for (let i = 0; i < owners.length; i += 50) {
    const batch = owners.slice(i, i + 50);
    devices.push(
      ...(await Promise.all(
        batch.map((o, k) => Promise.all(placement[i + k].map((p, d) => connect(procs[p].url, `k-${o}`, `${o}-d${d}`)))),
      )),
    );
  }
  await Promise.all(procs.map((p) => p.bus.ready()));
  return devices;
}

/** Every device leaves; resolves once every session closed and every unsubscription it caused is in effect. */
async function leave(devices: Device[][], procs: Proc[]): Promise<void> {
  const sessions = devices.length * 2;
  let left = 0;
  const allLeft = new Promise<void>((resolve) => {
    for (const p of procs)
      p.gateway.on("disconnect", () => {
        if (++left === sessions) resolve();
      });
  });
  for (const pair of devices) for (const d of pair) d.ws.close();
  await allLeft;
  await Promise.all(procs.map((p) => p.bus.ready()));
}

/** One run of the traffic measurement in one channel mode. */
export async function routingTraffic(
  setup: RoutingSetup,
  mode: ChannelMode,
  dropSchema: (schema: string) => Promise<void>,
): Promise<RoutingResult> {
  const schema = `bench_${setup.id}_${mode}`;
  const prefix = `bench:${setup.id}:${mode}:`;
  const owners = Array.from({ length: setup.owners }, (_, i) => `o${i}`);
  const tokens = Object.fromEntries(owners.map((o) => [`k-${o}`, o]));
  const counter = await trafficCounter(setup.redisUrl, prefix, mode);
  await counter.watch(owners);
  // Started one after another: the schema migration runs once.
  const procs: Proc[] = [];
  const calls = new Map<string, number>();
  for (let i = 0; i < setup.processes; i++) procs.push(await startProc(setup, mode, schema, prefix, tokens, calls));
  const placement = owners.map((_, i) => [i % setup.processes, (i + 1) % setup.processes]);
  const devices: Device[][] = [];
  const commands = () => sum(procs.map((p) => p.bus.stats.commands));
  try {
    let t0 = performance.now();
    let c0 = commands();
    calls.clear();
    devices.push(...(await connectAll(owners, placement, procs)));
    const connectMs = performance.now() - t0;
    const connectCommands = commands() - c0;
    const storageOnConnect = Object.fromEntries(calls);
    calls.clear();

    counter.perOwner.clear();
    const before = procs.map((p) => ({ ...p.bus.stats }));
    t0 = performance.now();
    await turns(devices, "q".repeat(setup.questionChars));
    const turnsMs = performance.now() - t0;
    // Frames published after message.stop (typing off) still count once they arrive.
    await new Promise((r) => setTimeout(r, 300));
    const perProcess = procs.map((p, n) =>
      traffic(
        n,
        owners.filter((_, i) => placement[i].includes(n)),
        counter.perOwner,
        p.bus.stats,
        before[n],
      ),
    );
    const all = [...counter.perOwner.values()];
    const storageOnTurns = Object.fromEntries(calls);

    t0 = performance.now();
    c0 = commands();
    await leave(devices, procs);
    const disconnectMs = performance.now() - t0;
    return {
      mode,
      totalMessages: sum(all.map((s) => s.messages)),
      totalBytes: sum(all.map((s) => s.bytes)),
      connectMs,
      turnsMs,
      disconnectMs,
      connectCommands,
      disconnectCommands: commands() - c0,
      storageOnConnect,
      storageOnTurns,
      perProcess,
    };
  } finally {
    for (const pair of devices) for (const d of pair) d.ws.terminate();
    for (const p of procs) await stopProc(p);
    counter.close();
    await dropSchema(schema);
  }
}
