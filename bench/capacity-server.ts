/**
 * The server children of bench/capacity.ts: the gateway (sql.js, token authenticator, 2 devices
 * per owner) or a bare `ws` server answering `hello` and `ping`. Each reports its port, then its
 * memory after a full GC (started with --expose-gc) whenever asked.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Session } from "node:inspector/promises";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { monitorEventLoopDelay, performance, PerformanceObserver } from "node:perf_hooks";
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { WebSocketServer } from "ws";
import { createGateway, tokenAuthenticator } from "chat-gateway";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { attachWebSocket } from "chat-gateway/ws";

export type Side = "gateway" | "bare";

/**
 * The listen backlog of both servers: 4096 (the kernel's `somaxconn` here), so that neither drops
 * connections of the storm; BENCH_BACKLOG=n another, e.g. 511, Node's default.
 */
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 4096);

/** Token of device `i` (0-based): two devices per owner, as in the measurement. */
export const deviceToken = (i: number) => `t${Math.floor(i / 2)}`;

function tokens(devices: number): Record<string, string> {
  const table: Record<string, string> = { probe: "probe-owner" };
  for (let i = 0; i < devices; i += 2) table[deviceToken(i)] = `owner-${i / 2}`;
  return table;
}

async function gatewayServer(server: http.Server, dir: string, devices: number): Promise<void> {
  const quiet = { info() {}, warn() {}, error() {} };
  const gateway = createGateway({
    storage: sqlJsStorage({ dir }),
    authenticator: tokenAuthenticator(tokens(devices)),
    runtime: demoRuntime({ delayMs: 0 }),
    logger: quiet,
    // Every bench device comes from 127.0.0.1: lift the per-address caps (not the per-owner one).
    maxConnectionsPerIp: 1_000_000,
    // The probe pings every 20 ms, past the default 20 frames a second, and the bare server has no
    // budget: lift the frame budget too, or the probe measures its own throttling (docs/PROTOCOL.md §2.4).
    rateLimit: { perSecond: 1e6, burst: 1e6 },
    connectRateLimit: { perSecond: 1e6, burst: 1e6 },
    rateLimitPerAddress: { perSecond: 1e6, burst: 1e6 },
    // BENCH_MAX_HELLOS=n: another maxHellosInFlight than the default, to compare.
    ...(process.env.BENCH_MAX_HELLOS ? { maxHellosInFlight: Number(process.env.BENCH_MAX_HELLOS) } : {}),
  });
  await gateway.start();
  traceState(server, gateway);
  attachWebSocket(gateway, {
    server,
    path: "/ws",
    ...(process.env.BENCH_QUEUE_UPGRADES === "0" ? { queueUpgrades: false } : {}),
    // BENCH_PACE=0: every new socket reads at once, as before the pacer (to compare).
    ...(process.env.BENCH_PACE === "0" ? { paceSockets: false } : {}),
  });
}

function bareServer(server: http.Server): void {
  const wss = new WebSocketServer({ server, path: "/ws", perMessageDeflate: false });
  wss.on("connection", (ws) => {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string; id?: string };
      if (frame.type === "hello")
        ws.send(JSON.stringify({ type: "hello.ok", id: frame.id, payload: { protocol: 1, cursor: 0 } }));
      else if (frame.type === "ping")
        ws.send(JSON.stringify({ type: "pong", id: frame.id, payload: { ts: Date.now() } }));
    });
  });
}

/**
 * BENCH_STATE_TRACE=1: every 250 ms from listening, the server's sockets, the gateway's
 * connections, those waiting for room, the hellos done and the loop's busy share (stderr).
 */
function traceState(server: http.Server, gateway: ReturnType<typeof createGateway>): void {
  if (!process.env.BENCH_STATE_TRACE) return;
  server.once("listening", () => {
    const started = performance.now();
    let elu = performance.eventLoopUtilization();
    setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, elu).utilization;
      elu = now;
      const s = gateway.stats();
      server.getConnections((_e, sockets) =>
        console.error(
          `state ${Math.round(performance.now() - started)} ms: sockets ${sockets} connections ${s.connections} waiting ${s.connectionsWaiting} ok ${s.hellos.ok} shed ${s.hellos.shed} busy ${(busy * 100).toFixed(0)}%`,
        ),
      );
    }, 250).unref();
  });
}

/** Runs one server child until told to exit (or killed). */
export async function serveCapacity(side: Side, dir: string, port: number, devices: number): Promise<void> {
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  if (side === "gateway") await gatewayServer(server, dir, devices);
  else bareServer(server);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", BACKLOG, resolve));
  if (process.env.BENCH_LOOP_STALLS)
    console.error(`${side} listening ${(performance.now() / 1000).toFixed(2)} s after its start`);
  let snapshots = 0;
  const stalls = watchStalls();
  const profile = await profileUntilMeasured(side);
  process.on("message", async (m: { kind: string }) => {
    if (m.kind === "exit") {
      stalls?.();
      process.exit(0);
    }
    if (m.kind !== "memory") return;
    // BENCH_SETTLE_MS=n: wait that long idle first, as a process left alone would (V8's memory
    // reducer runs a few seconds after the allocations stop).
    if (process.env.BENCH_SETTLE_MS) await new Promise((r) => setTimeout(r, Number(process.env.BENCH_SETTLE_MS)));
    for (let i = 0; i < 3; i++) {
      (globalThis as { gc?: () => void }).gc?.();
      await new Promise((r) => setTimeout(r, 50));
    }
    await profile?.();
    const usage = process.memoryUsage();
    // BENCH_HEAP_SNAPSHOT=dir: a heap snapshot at each measurement, to compare idle with loaded.
    if (process.env.BENCH_HEAP_SNAPSHOT)
      writeHeapSnapshot(join(process.env.BENCH_HEAP_SNAPSHOT, `${side}-${++snapshots}.heapsnapshot`));
    // The young generation's size: it grows with the allocation rate and stays in the RSS.
    const newSpace = getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0;
    // BENCH_MEMORY_DETAIL=1: where the RSS is, per V8 space and outside the heap (stderr).
    if (process.env.BENCH_MEMORY_DETAIL) {
      const spaces = getHeapSpaceStatistics().map(
        (space) =>
          `${space.space_name} ${(space.space_size / 1e6).toFixed(1)}/${(space.space_used_size / 1e6).toFixed(1)}`,
      );
      const mb = (n: number) => (n / 1e6).toFixed(1);
      console.error(
        `${side} memory: rss ${mb(usage.rss)} heapTotal ${mb(usage.heapTotal)} heapUsed ${mb(usage.heapUsed)} external ${mb(usage.external)} arrayBuffers ${mb(usage.arrayBuffers)} MB; spaces (size/used MB): ${spaces.join(", ")}`,
      );
    }
    process.send!({ rss: usage.rss, heap: usage.heapUsed + usage.external, newSpace });
  });
  process.on("disconnect", () => process.exit(0));
  process.send!({ port: (server.address() as AddressInfo).port });
}

/**
 * BENCH_LOOP_STALLS=1: the server's event-loop delay from listening on, printed when it is told to
 * exit (the storm's server; the first one is killed): a histogram and the longest stalls, each
 * with when it ended (ms after listening), to tell a startup cost from a storm's queue, and how
 * long the main thread ran and waited for a CPU during each (Linux's schedstat).
 */
function watchStalls(): (() => void) | undefined {
  if (!process.env.BENCH_LOOP_STALLS) return undefined;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const started = performance.now();
  const stalls: Array<[number, number]> = [];
  let last = started;
  // Garbage collections of 20 ms or more, with when they ended, to tell a GC pause from a burst of work.
  const pauses: string[] = [];
  const gcs = new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (entry.duration >= 20)
        pauses.push(`${Math.round(entry.duration)}@${Math.round(entry.startTime + entry.duration - started)}`);
  });
  gcs.observe({ entryTypes: ["gc"] });
  // Each stall with the main thread's time on a CPU and waiting for one meanwhile (schedstat, ns),
  // to tell the loop's own work from a CPU the other processes held.
  const schedstat = `/proc/self/task/${process.pid}/schedstat`;
  // Linux only: elsewhere the stalls are printed without it.
  const sched = () => (existsSync(schedstat) ? readFileSync(schedstat, "utf8").split(" ").map(Number) : [0, 0]);
  let lastSched = sched();
  const detail: string[] = [];
  setInterval(() => {
    const now = performance.now();
    const nowSched = sched();
    if (now - last > 40) {
      stalls.push([Math.round(now - started), Math.round(now - last - 10)]);
      const ran = (nowSched[0]! - lastSched[0]!) / 1e6;
      const waited = (nowSched[1]! - lastSched[1]!) / 1e6;
      detail.push(
        `${Math.round(now - last - 10)}@${Math.round(now - started)}: ran ${ran.toFixed(0)} waited ${waited.toFixed(0)}`,
      );
    }
    last = now;
    lastSched = nowSched;
  }, 10).unref();
  return () => {
    const ms = (ns: number) => (ns / 1e6).toFixed(1);
    const top = [...stalls]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([at, d]) => `${d}@${at}`);
    console.error(
      `stalls' main thread (ms): ${detail.join("; ")}\nloop delay p50 ${ms(histogram.percentile(50))} p99 ${ms(histogram.percentile(99))} max ${ms(histogram.max)} ms; stalls > 30 ms: ${stalls.length}, longest (ms@at): ${top.join(" ")}; GC pauses of 20 ms or more: ${pauses.join(" ") || "none"}`,
    );
  };
}

/**
 * BENCH_CPU_PROFILE=dir: a CPU profile (with BENCH_ALLOC_PROFILE=1 an allocation profile, collected objects
 * included) of the first server from listening to its first measurement
 * with devices (the hello phase; `--cpu-prof` writes none for a process killed with SIGKILL).
 */
async function profileUntilMeasured(side: Side): Promise<(() => Promise<void>) | undefined> {
  const dir = process.env.BENCH_CPU_PROFILE;
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  // BENCH_ALLOC_PROFILE=1: everything the hellos allocated; =old: what was still live or died in
  // the old generation (the free room a full GC leaves); =live: what is live at the measurement.
  const kind = process.env.BENCH_ALLOC_PROFILE;
  const allocations = kind === "1" || kind === "old" || kind === "live";
  if (allocations)
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: kind !== "live",
      includeObjectsCollectedByMinorGC: kind === "1",
    } as never);
  else {
    await session.post("Profiler.setSamplingInterval", { interval: 500 });
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  }
  let measurements = 0;
  return async () => {
    // The first measurement is of the idle server; the second follows the hellos.
    if (++measurements !== 2) return;
    if (allocations) {
      const { profile } = await session.post("HeapProfiler.stopSampling");
      writeFileSync(join(dir, `${side}-hellos-${process.pid}.heapprofile`), JSON.stringify(profile));
    } else {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(join(dir, `${side}-hellos-${process.pid}.cpuprofile`), JSON.stringify(profile));
    }
    session.disconnect();
  };
}
