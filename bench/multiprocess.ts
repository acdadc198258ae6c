/**
 * Multi-process benchmark (issue #8), on PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379).
 *
 *   node --import tsx bench/multiprocess.ts            # 1 warm-up + 5 measured turns per layout
 *   node --import tsx bench/multiprocess.ts --quick    # 1 warm-up + 2 measured turns, smaller storage run
 *   node --import tsx bench/multiprocess.ts --routing  # only the routing measurement (see bench/routing.ts)
 *
 * Fan-out: 200 devices of one owner hold WebSocket connections to example-server processes that
 * share one PostgreSQL schema and one Redis prefix; one device asks for a 4,000-character answer,
 * streamed by the demo runtime in 10-character deltas with no delay. Measured per turn: time from
 * the request leaving the device until all 200 hold the final text (`message.stop`), and the
 * messages that went through the Redis channels (counted by a subscriber in this process) per
 * second of that time. Layouts, in the same run: `2 processes` (100 devices on each) and
 * `1 process` (all 200 on one; its frames still go through Redis, which nobody else reads).
 *
 * Storage: the same operations on `postgresStorage` and `sqlJsStorage`, one after another in this
 * process: commits of a message with one outbox frame, getMessage, history pages, searches,
 * readOutbox pages. Operations per second per kind.
 *
 * Routing (bench/routing.ts): 1,000 owners (300 with --quick) with 2 devices each over 3 gateways,
 * one streamed answer per owner; messages and bytes each gateway received from Redis against its
 * share, with per-owner channels and with the shared channel of before, in the same run; and the
 * subscription churn of 1,000 devices connecting and leaving.
 *
 * Prints Markdown tables and the raw JSON. Figures go to bench/NOTES.md, and the newest to bench/RESULTS.md.
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";
import { WebSocket } from "ws";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { busThroughput, type Throughput } from "./bus-throughput.js";
import { routingTraffic, type RoutingSetup } from "./routing.js";
import { subscriptionChurn } from "./routing-churn.js";
import { printRouting } from "./routing-report.js";
import { storageOps, type StorageResult } from "./storage-ops.js";

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const DEVICES = 200;
const ANSWER_CHARS = 4000;
const PREFIX_TEXT = "You said: ";
const quick = process.argv.includes("--quick");
const routingOnly = process.argv.includes("--routing");
const RUNS = quick ? 2 : 5;
const root = join(fileURLToPath(new URL(".", import.meta.url)), "..");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function userText(): string {
  const words = "the quick brown fox jumps over a lazy dog while streaming deltas to many devices ";
  return words.repeat(Math.ceil(ANSWER_CHARS / words.length)).slice(0, ANSWER_CHARS - PREFIX_TEXT.length);
}

// ---------------------------------------------------------------------------------------------
// Gateway processes

interface Proc {
  ws: string;
  child: ChildProcess;
}

function startGateway(env: Record<string, string>): Promise<Proc> {
  const child = spawn(process.execPath, ["--import", "tsx", "examples/server/main.ts"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: "0",
      GATEWAY_DEMO_DELAY_MS: "0",
      GATEWAY_DEMO_CHUNK_CHARS: "10",
      GATEWAY_CONNECTIONS_PER_OWNER: "10000",
      GATEWAY_CONNECTIONS_PER_IP: "10000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line: ${out}`)), 60_000);
    child.stdout!.on("data", () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ ws: `${m[1].replace("http", "ws")}/ws/gateway`, child });
      }
    });
    child.once("exit", (code) => reject(new Error(`gateway exited ${code}: ${out}`)));
  });
}

async function stopGateway(p: Proc): Promise<void> {
  if (p.child.exitCode !== null) return;
  const exited = new Promise((r) => p.child.once("exit", r));
  p.child.kill("SIGTERM");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (p.child.exitCode === null) p.child.kill("SIGKILL");
}

// ---------------------------------------------------------------------------------------------
// Devices

interface Device {
  ws: WebSocket;
  /** Resolves with the time the next message.stop arrived. */
  nextStop(): Promise<number>;
  send(frame: unknown): void;
}

let deviceN = 0;
async function connect(url: string): Promise<Device> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  let waiting: ((t: number) => void) | undefined;
  let helloOk: (() => void) | undefined;
  const hello = new Promise<void>((r) => (helloOk = r));
  ws.on("message", (data) => {
    const text = String(data);
    if (text.startsWith('{"type":"hello.ok"')) helloOk?.();
    else if (text.startsWith('{"type":"message.stop"') && waiting) {
      const w = waiting;
      waiting = undefined;
      w(performance.now());
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  ws.send(
    JSON.stringify({
      type: "hello",
      id: "h",
      payload: { token: "", device_id: `bench-${++deviceN}`, device_name: "bench" },
    }),
  );
  await hello;
  return {
    ws,
    nextStop: () => new Promise((r) => (waiting = r)),
    send: (frame) => ws.send(JSON.stringify(frame)),
  };
}

// ---------------------------------------------------------------------------------------------
// Fan-out

interface FanoutResult {
  layout: string;
  finalMs: number[];
  redisMessages: number[];
  redisPerSecond: number[];
}

async function fanout(
  layout: string,
  processes: number,
  delayMs: number,
  runs: number,
  cluster: { schema: string; prefix: string; dataDir: string },
  counter: { count: number },
): Promise<FanoutResult> {
  const env = {
    GATEWAY_DATA_DIR: cluster.dataDir,
    DATABASE_URL,
    DATABASE_SCHEMA: cluster.schema,
    REDIS_URL,
    REDIS_PREFIX: cluster.prefix,
    GATEWAY_DEMO_DELAY_MS: String(delayMs),
  };
  const procs = await Promise.all(Array.from({ length: processes }, () => startGateway(env)));
  const devices: Device[] = [];
  try {
    // Connect in batches: 200 handshakes at once on 2 shared cores only measure the scheduler.
    for (let i = 0; i < DEVICES; i += 20) {
      devices.push(
        ...(await Promise.all(Array.from({ length: 20 }, (_, k) => connect(procs[(i + k) % processes].ws)))),
      );
    }
    const result: FanoutResult = { layout, finalMs: [], redisMessages: [], redisPerSecond: [] };
    const text = userText();
    for (let run = 0; run <= runs; run++) {
      const stops = devices.map((d) => d.nextStop());
      const before = counter.count;
      const t0 = performance.now();
      devices[0].send({ type: "message.send", id: `s${run}`, payload: { chat_id: "default", text } });
      const done = Math.max(...(await Promise.all(stops)));
      const ms = done - t0;
      // Frames published after the final one (typing off) still count, once they arrive.
      await new Promise((r) => setTimeout(r, 100));
      const messages = counter.count - before;
      if (run === 0) continue; // warm-up
      result.finalMs.push(ms);
      result.redisMessages.push(messages);
      result.redisPerSecond.push(messages / (ms / 1000));
    }
    return result;
  } finally {
    for (const d of devices) d.ws.terminate();
    await Promise.all(procs.map(stopGateway));
  }
}

// ---------------------------------------------------------------------------------------------

/** One run's throwaway names: its schemas and key prefixes, and its data folder. */
interface RunScope {
  id: string;
  admin: pg.Client;
  redis: Redis;
  schemas: string[];
  dataDir: string;
}

/** PostgreSQL and Redis connected, or undefined (said why) when either is not reachable. */
async function connectServices(): Promise<Pick<RunScope, "admin" | "redis"> | undefined> {
  const admin = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 });
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await admin.connect();
    await redis.connect();
    return { admin, redis };
  } catch (error) {
    console.log(
      `multiprocess bench: skipped, PostgreSQL or Redis is not reachable (${(error as Error).message}); run .ci/services.sh`,
    );
    await admin.end().catch(() => undefined);
    redis.disconnect();
    return undefined;
  }
}

/** Drops the run's schemas and keys, and closes its connections. */
async function cleanUp({ id, admin, redis, schemas, dataDir }: RunScope): Promise<void> {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `bench:${id}:*`, "COUNT", 500);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== "0");
  await admin.end();
  redis.disconnect();
  rmSync(dataDir, { recursive: true, force: true });
}

/** Every fan-out layout, each on its own schema and prefix, with the bus messages counted from here. */
async function fanouts(scope: RunScope): Promise<FanoutResult[]> {
  const subscriber = scope.redis.duplicate();
  const fan: FanoutResult[] = [];
  let n = 0;
  try {
    for (const [layout, processes, delayMs, runs] of [
      ["2 processes, burst (delay 0)", 2, 0, RUNS],
      ["1 process, burst (delay 0)", 1, 0, RUNS],
      ["2 processes, paced (15 ms per delta)", 2, 15, quick ? 1 : 2],
      ["1 process, paced (15 ms per delta)", 1, 15, quick ? 1 : 2],
    ] as const) {
      const schema = `bench_${scope.id}_${++n}`;
      scope.schemas.push(schema);
      const prefix = `bench:${scope.id}:${n}:`;
      const counter = { count: 0 };
      // Every bus channel of the prefix: the owner's own (`bus:{owner}`) or the shared one.
      await subscriber.psubscribe(`${prefix}bus*`);
      subscriber.on("pmessage", (pattern: string) => {
        if (pattern === `${prefix}bus*`) counter.count++;
      });
      fan.push(await fanout(layout, processes, delayMs, runs, { schema, prefix, dataDir: scope.dataDir }, counter));
      await subscriber.punsubscribe(`${prefix}bus*`);
    }
  } finally {
    subscriber.disconnect();
  }
  return fan;
}

/** The storage operations on PostgreSQL and on sql.js, one after the other. */
async function storages(scope: RunScope): Promise<StorageResult[]> {
  const pgSchema = `bench_${scope.id}_storage`;
  scope.schemas.push(pgSchema);
  const sqlDir = mkdtempSync(join(tmpdir(), "cg-bench-sqljs-"));
  const n = quick ? 400 : 2000;
  try {
    return [
      await storageOps("postgres", postgresStorage({ connectionString: DATABASE_URL, schema: pgSchema }), n),
      await storageOps("sql.js", sqlJsStorage({ dir: sqlDir }), n),
    ];
  } finally {
    rmSync(sqlDir, { recursive: true, force: true });
  }
}

function printResults(fan: FanoutResult[], throughput: Throughput[], stores: StorageResult[]): void {
  console.log(`\n### Fan-out: ${DEVICES} devices, ${ANSWER_CHARS}-character answer, median of ${RUNS} turns\n`);
  console.log(
    "| layout | time to final text on every device | messages through Redis per turn | messages/s through Redis |",
  );
  console.log("|---|---|---|---|");
  for (const f of fan) {
    console.log(
      `| ${f.layout} | ${median(f.finalMs).toFixed(0)} ms (min ${Math.min(...f.finalMs).toFixed(0)}, max ${Math.max(...f.finalMs).toFixed(0)}) | ${median(f.redisMessages)} | ${median(f.redisPerSecond).toFixed(0)} |`,
    );
  }
  console.log("\n### Redis bus throughput: one process publishes, another receives (redisBus to redisBus)\n");
  console.log("| frame | frames | messages/s | MB/s |");
  console.log("|---|---|---|---|");
  for (const t of throughput)
    console.log(`| ${t.frame} | ${t.frames} | ${t.perSecond.toFixed(0)} | ${t.mbPerSecond.toFixed(1)} |`);
  console.log(`\n### Storage operations per second (${quick ? 400 : 2000} messages)\n`);
  const kinds = Object.keys(stores[0].opsPerSecond);
  console.log(`| operation | ${stores.map((s) => s.storage).join(" | ")} | postgres / sql.js |`);
  console.log(`|---|${stores.map(() => "---").join("|")}|---|`);
  for (const k of kinds) {
    const [p, s] = stores.map((st) => st.opsPerSecond[k]);
    console.log(`| ${k} | ${p.toFixed(0)} | ${s.toFixed(0)} | ${(p / s).toFixed(2)}x |`);
  }
}

async function main(): Promise<void> {
  const services = await connectServices();
  if (!services) return;
  const scope: RunScope = {
    ...services,
    id: randomBytes(5).toString("hex"),
    schemas: [],
    dataDir: mkdtempSync(join(tmpdir(), "cg-bench-multi-")),
  };
  try {
    const setup: RoutingSetup = {
      databaseUrl: DATABASE_URL,
      redisUrl: REDIS_URL,
      owners: quick ? 300 : 1000,
      processes: 3,
      id: scope.id,
      questionChars: 390,
    };
    const dropSchema = (schema: string) =>
      scope.admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).then(() => undefined);
    const routing = [
      await routingTraffic(setup, "owner", dropSchema),
      await routingTraffic(setup, "shared", dropSchema),
    ];
    const churn = await subscriptionChurn(REDIS_URL, `bench:${scope.id}:churn:`, 1000);
    printRouting(setup, routing, churn);
    if (routingOnly) {
      console.log("\n```json");
      console.log(JSON.stringify({ routing, churn }));
      console.log("```");
      return;
    }
    const fan = await fanouts(scope);
    const throughput = await busThroughput(REDIS_URL, `bench:${scope.id}:bus:`, quick);
    const stores = await storages(scope);
    printResults(fan, throughput, stores);
    console.log("\n```json");
    console.log(JSON.stringify({ fanout: fan, bus: throughput, storage: stores, routing, churn }));
    console.log("```");
  } finally {
    await cleanUp(scope);
  }
}

await main();
