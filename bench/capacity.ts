/**
 * What an idle device costs (issue 31 §2): memory per connection, hellos per second, and the
 * reconnect storm after a `kill -9`, for the gateway and a bare `ws` server in the same run.
 *
 *   node --import tsx bench/capacity.ts                  # 15,000 devices, 2 runs per side
 *   node --import tsx bench/capacity.ts --devices=2000   # fewer devices (profiling, quick checks)
 *   node --import tsx bench/capacity.ts --runs=3         # more runs per side
 *   BENCH_HEAP_SNAPSHOT=/tmp/snaps node --import tsx bench/capacity.ts --devices=2000 --runs=1   # heap snapshots of the servers, idle and loaded
 *   node --import tsx bench/capacity.ts --tsx            # servers under tsx rather than bundled (see startServer)
 *   BENCH_SERVER_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node --import tsx bench/capacity.ts   # profiles of the storm's servers
 *   BENCH_CPU_PROFILE=/tmp/prof node --import tsx bench/capacity.ts   # profiles of the hello phase
 *   BENCH_ALLOC_PROFILE=1 BENCH_CPU_PROFILE=/tmp/prof ...   # allocation profiles (.heapprofile) of the hello phase instead
 *     (=old: only what lived or died in the old generation; =live: only what is live at the measurement)
 *   BENCH_LOOP_STALLS=1 ...   # the storm server's event-loop stalls and GC pauses
 *   BENCH_BACKLOG=511 ...     # another listen backlog for both servers (default 4096)
 *   BENCH_SETTLE_MS=20000 ... # each memory measurement after that long idle (V8's memory reducer has run)
 *   BENCH_MEMORY_DETAIL=1 ... # where each measurement's RSS is: V8's spaces, size and used
 *   BENCH_STORM_TRACE=1 ...   # what the storm's attempts ended in, per second
 *   BENCH_MAX_HELLOS=n ...    # the gateway's maxHellosInFlight (default 128)
 *   BENCH_SIDES=gateway ...   # one side only (bare or gateway), for a profile; the ratios need both
 *   BENCH_PING_TRACE=1 ...    # the probe's round trips over 30 ms in the storm, with when they ended
 *   BENCH_DEVICES_NICE=10 ... # the devices' process at a lower priority, as if the devices ran on other machines
 *   BENCH_QUEUE_UPGRADES=0 ... # the gateway's ws adapter with queueUpgrades false (sheds hellos with 1013 instead)
 *   BENCH_PACE=0 ...          # the gateway's ws adapter with paceSockets false (every new socket reads at once)
 *   BENCH_STATE_TRACE=1 ...   # the gateway's sockets, connections, waiters, hellos and loop share every 250 ms
 *
 * Processes: each server (the gateway: createGateway + attachWebSocket, sql.js in a temp dir, a
 * token authenticator with 2 devices per owner; the bare side: a `ws` server that answers `hello`
 * with `hello.ok` and `ping` with `pong`) runs in a child of its own, started with --expose-gc so
 * its memory is measured after a full GC; all devices run in a second child, a fresh one for each
 * run and side (one that served a side before would collect its garbage in the next storm); this process holds
 * the probe connection and prints the tables.
 *
 * Measured per run and side:
 * - memory: the server's RSS and V8 heap after GC, with N idle devices connected, less the same
 *   with none, divided by N;
 * - hello rate: N devices connect (at most 256 opening at once) and say `hello`; N divided by
 *   the time from the first open to the last `hello.ok`; a hello shed with close 1013 or an
 *   upgrade shed with 503 is tried again after its hint (docs/PROTOCOL.md §18.5) and counted;
 * - CPU per hello: the CPU time (user and system, from /proc) the server with its children (the
 *   gateway's database process) and the devices' process spent over the hellos, divided by N: on
 *   a machine where the three share two cores, this sets the hello rate, and it is steadier;
 * - storm: the server is killed with SIGKILL and started again on the same port (same sql.js
 *   dir); every device reconnects after a random delay in [0, 1 s) and again after any failure:
 *   when shed (1013, 503), after its hint plus up to half of it again, otherwise with exponential
 *   backoff and full jitter; on the gateway it sends `sync {cursor}` after
 *   `hello.ok`. Time from the restarted server listening until all N are back (`sync.done` on
 *   the gateway, `hello.ok` on the bare side), and the ping round trips of one other connection
 *   (one ping every 20 ms from this process) meanwhile: p50, p99, max; and the CPU time of the
 *   restarted server with its children from listening until all are back, per device.
 *
 * The machine is shared: the load average is printed with every run, compare ratios only.
 * 15,000 connections need 15,000+ file descriptors in the server and in the device process;
 * the bench checks `ulimit -n` (the soft limit) up front and says when it is too low.
 * Figures go to bench/NOTES.md, and the newest to bench/RESULTS.md.
 * @module
 */
import { execSync, fork, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, setPriority, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { serveCapacity, type Side } from "./capacity-server.js";
import { runDevices, type DeviceCommand, type DeviceReport } from "./capacity-devices.js";
import { treeCpu } from "./process-cpu.js";
import { printTable, type Memory, type RunResult } from "./capacity-report.js";

const self = fileURLToPath(import.meta.url);
const here = dirname(self);
const root = join(here, "..");
const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const DEVICES = arg("devices", 15_000);
const RUNS = arg("runs", 2);
/** BENCH_SIDES=gateway (or bare): one side only, for profiling; the ratios need both. */
const SIDES = (process.env.BENCH_SIDES?.split(",") ?? ["bare", "gateway"]) as Side[];

/** One forked child (server or devices) and its replies, in order. */
class Child {
  readonly proc: ChildProcess;
  readonly #replies: Array<(m: any) => void> = [];
  readonly #queued: any[] = [];

  constructor(file: string, args: string[], execArgv: string[]) {
    this.proc = fork(file, args, { stdio: ["ignore", "inherit", "inherit", "ipc"], execArgv });
    this.proc.on("message", (m) => {
      const waiter = this.#replies.shift();
      if (waiter) waiter(m);
      else this.#queued.push(m);
    });
  }

  next<T>(): Promise<T> {
    if (this.#queued.length) return Promise.resolve(this.#queued.shift());
    return new Promise((resolve, reject) => {
      const exited = (code: number | null, signal: string | null) =>
        reject(new Error(`child exited (${code ?? signal})`));
      // One listener per wait, removed with its reply: a run asks each child many times.
      this.proc.once("exit", exited);
      this.#replies.push((m) => {
        this.proc.off("exit", exited);
        resolve(m);
      });
    });
  }

  ask<T>(message: unknown): Promise<T> {
    this.proc.send(message as object);
    return this.next<T>();
  }

  exited(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.proc.once("exit", () => resolve()));
  }
}

/**
 * The servers run as an esbuild bundle, as tsup ships the library: tsx gives every function a
 * `name` property of its own (esbuild's keepNames), which costs each closure a 256-byte property
 * array and would be counted per connection. `--tsx` runs them under tsx instead, for contrast.
 */
const underTsx = process.argv.includes("--tsx");
const bundleDir = join(root, "node_modules", ".cache", "capacity-bench");
const bundle = join(bundleDir, "server.mjs");

async function bundleServer(): Promise<void> {
  const { build } = await import("esbuild");
  mkdirSync(bundleDir, { recursive: true });
  await build({
    stdin: {
      contents:
        'import { serveCapacity } from "./capacity-server.js";\nconst a = process.argv.slice(2);\nawait serveCapacity(a[0], a[1], Number(a[2]), Number(a[3]));\n',
      resolveDir: here,
      loader: "ts",
    },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile: bundle,
    packages: "external",
    tsconfig: join(root, "tsconfig.json"),
    logLevel: "warning",
  });
  // sql.js runs its database in a process started from beside the bundle (an ESM .js file, as in
  // dist/) and writes snapshots in a worker from there too.
  await build({
    entryPoints: [join(root, "adapters/storage/sqljs/engine-main.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile: join(bundleDir, "sqljs-engine.js"),
    packages: "external",
    tsconfig: join(root, "tsconfig.json"),
    logLevel: "warning",
  });
  writeFileSync(join(bundleDir, "package.json"), '{ "type": "module" }\n');
  copyFileSync(
    join(root, "adapters/storage/sqljs/sqljs-snapshot-worker.mjs"),
    join(bundleDir, "sqljs-snapshot-worker.mjs"),
  );
}

function startServer(side: Side, dir: string, port: number): Child {
  const extra = ["--expose-gc", ...(process.env.BENCH_SERVER_ARGS ?? "").split(" ").filter(Boolean)];
  const args = [side, dir, String(port), String(DEVICES)];
  if (underTsx) return new Child(self, ["--server", ...args], [...process.execArgv, ...extra]);
  return new Child(bundle, args, extra);
}

/** One connection that pings every 20 ms and keeps the round trips, reconnecting until it is back. */
class Probe {
  readonly rtts: number[] = [];
  #ws: WebSocket | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  /** `since`: when the storm began (performance.now), for BENCH_PING_TRACE's timestamps. */
  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly since: number,
  ) {}

  async start(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#open();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  #open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url, { perMessageDeflate: false });
      const sent = new Map<string, number>();
      let n = 0;
      ws.once("error", reject);
      ws.once("open", () =>
        ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: this.token, device_id: "probe" } })),
      );
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as { type: string; id?: string };
        if (frame.type === "hello.ok") {
          this.#ws = ws;
          this.#timer = setInterval(() => {
            const id = `p${++n}`;
            sent.set(id, performance.now());
            ws.send(JSON.stringify({ type: "ping", id, payload: {} }));
          }, 20);
          resolve();
        } else if (frame.type === "pong" && frame.id && sent.has(frame.id)) {
          const rtt = performance.now() - sent.get(frame.id)!;
          this.rtts.push(rtt);
          // BENCH_PING_TRACE=1: every round trip over 30 ms, with when it ended (ms after the storm began).
          if (process.env.BENCH_PING_TRACE && rtt > 30)
            console.error(`slow ping ${rtt.toFixed(1)} ms at ${(performance.now() - this.since).toFixed(0)}`);
          sent.delete(frame.id);
        }
      });
      ws.once("close", () => reject(new Error("probe closed")));
    });
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#ws?.terminate();
  }
}

const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] : NaN;

async function oneRun(side: Side, devices: Child): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), "capacity-"));
  const load = loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
  try {
    let server = startServer(side, dir, 0);
    const { port } = await server.next<{ port: number }>();
    const idle = await server.ask<Memory>({ kind: "memory" });
    const url = `ws://127.0.0.1:${port}/ws`;
    const serverBefore = treeCpu(server.proc.pid!);
    const devicesBefore = treeCpu(devices.proc.pid!);
    const hello = await devices.ask<DeviceReport>({
      kind: "connect",
      url,
      count: DEVICES,
      side,
    } satisfies DeviceCommand);
    const serverAfter = treeCpu(server.proc.pid!);
    const devicesAfter = treeCpu(devices.proc.pid!);
    const perDevice = (after: number, before: number) => ((after - before) * 1e6) / DEVICES;
    const loaded = await server.ask<Memory>({ kind: "memory" });
    const memory = {
      rss: (loaded.rss - idle.rss) / DEVICES,
      heap: (loaded.heap - idle.heap) / DEVICES,
      newSpace: loaded.newSpace,
    };

    server.proc.kill("SIGKILL");
    await server.exited();
    const stormStarted = devices.ask<DeviceReport>({ kind: "storm" } satisfies DeviceCommand);
    server = startServer(side, dir, port);
    await server.next<{ port: number }>();
    const stormCpuBefore = treeCpu(server.proc.pid!).tree;
    const listening = Date.now();
    devices.proc.send({ kind: "listening" } satisfies DeviceCommand);
    const probe = new Probe(url, "probe", performance.now());
    await probe.start();
    const storm = await stormStarted;
    const stormCpu = perDevice(treeCpu(server.proc.pid!).tree, stormCpuBefore);
    probe.stop();
    await devices.ask<DeviceReport>({ kind: "close" } satisfies DeviceCommand);
    server.proc.send({ kind: "exit" });
    await server.exited();
    const rtts = probe.rtts;
    return {
      side,
      load,
      memory,
      hellosPerSecond: (DEVICES / hello.ms) * 1000,
      helloRetries: hello.retries,
      serverCpuPerHello: perDevice(serverAfter.tree, serverBefore.tree),
      devicesCpuPerHello: perDevice(devicesAfter.tree, devicesBefore.tree),
      childrenCpuPerHello: perDevice(serverAfter.children, serverBefore.children),
      stormMs: storm.doneAt - listening,
      stormRetries: storm.retries,
      stormCpuPerDevice: stormCpu,
      pingP50: pct(rtts, 50),
      pingP99: pct(rtts, 99),
      pingMax: Math.max(...rtts),
      pings: rtts.length,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function checkFileLimit(): void {
  const soft = Number(execSync("ulimit -n", { shell: "/bin/bash" }).toString().trim());
  if (soft < DEVICES + 500) {
    console.error(
      `ulimit -n is ${soft}: ${DEVICES} connections need at least ${DEVICES + 500}; raise it (ulimit -n ${DEVICES + 1000}) or pass --devices=`,
    );
    process.exit(2);
  }
}

async function main(): Promise<void> {
  checkFileLimit();
  if (!underTsx) await bundleServer();
  const results: RunResult[] = [];
  for (let run = 0; run < RUNS; run++) {
    for (const side of SIDES) {
      // A devices' process of its own for each side: one that served the side before carries its
      // 15,000 closed sockets' garbage into the next side's storm, and its collections run then.
      const devices = new Child(self, ["--devices", String(DEVICES)], process.execArgv);
      // BENCH_DEVICES_NICE=n: the devices' process at a lower priority, as if they ran on other machines.
      if (process.env.BENCH_DEVICES_NICE) setPriority(devices.proc.pid!, Number(process.env.BENCH_DEVICES_NICE));
      const r = await oneRun(side, devices);
      console.error(`run ${run + 1} ${side}: ${JSON.stringify(r)}`);
      results.push(r);
      devices.proc.send({ kind: "exit" } satisfies DeviceCommand);
      await devices.exited();
    }
  }
  printTable(results, DEVICES, SIDES);
}

const role = process.argv[2];
if (role === "--server")
  await serveCapacity(process.argv[3] as Side, process.argv[4], Number(process.argv[5]), Number(process.argv[6]));
else if (role === "--devices") await runDevices();
else await main();
