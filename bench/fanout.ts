/**
 * Fan-out benchmark (issue #2): one owner with 100 connected devices, a 4,000-character answer
 * streamed by the demo runtime in 10-character deltas.
 *
 *   node --import tsx bench/fanout.ts            # 1 warm-up + 5 measured runs per side, 2 paced runs
 *   node --import tsx bench/fanout.ts --quick    # 1 warm-up + 2 measured runs per side, 1 paced run
 *   node --import tsx bench/fanout.ts --runs=20  # more measured runs per side
 *   BENCH_METRICS=1 node --import tsx bench/fanout.ts   # the gateway counted by chat-gateway/metrics, scraped every second
 *   BENCH_SERVER_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node --import tsx bench/fanout.ts   # profile the servers
 *
 * Sides, each a server in its own child process (this process plays the 100 devices):
 * - `gateway`: createGateway + attachWebSocket, memory storage, demoRuntime({ delayMs: 0 }).
 * - `bare`: a plain ws server that takes the same deltas from the same demo runtime and sends the
 *   full text so far on every delta (the naive way) to every client.
 * - `gateway, paced`: the gateway with the demo runtime at its default pace (delayMs 15), to show
 *   how `message.update` is coalesced (at most one per 50 ms per message).
 *
 * Measured per run: time from the request leaving a device until all 100 devices hold the final
 * text (the 4,000th character; `message.stop` on the gateway), text frames and their bytes as the
 * devices receive them, bytes the server wrote to its TCP sockets (WebSocket headers included),
 * the server's event-loop delay (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution) and its CPU
 * time. Prints a Markdown table and the raw JSON. Figures go to bench/NOTES.md, and the newest to
 * bench/RESULTS.md.
 * The paced case beside this burst (delta updates, full text, compression) is bench/fanout-stream.ts.
 * @module
 */
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import type { FromServer, Side, ToServer } from "./fanout-servers.js";
import { ServerChild } from "./server-child.js";

const DEVICES = 100;
const ANSWER_CHARS = 4000;
const CHUNK_CHARS = 10;
const PREFIX = "You said: ";
const RUN_TIMEOUT_MS = 60_000;
const serverFile = fileURLToPath(new URL("./fanout-servers.ts", import.meta.url));

type Server = ServerChild<ToServer, FromServer>;

/** The user text whose echo by the demo runtime (`You said: …`) is exactly ANSWER_CHARS long. */
function userText(): string {
  const words = "the quick brown fox jumps over a lazy dog while streaming deltas to many devices ";
  return words.repeat(Math.ceil(ANSWER_CHARS / words.length)).slice(0, ANSWER_CHARS - PREFIX.length);
}

// ---------------------------------------------------------------------------------------------
// This process: the devices

/** One device: counts what it receives and notes when it holds the final text. */
interface Device {
  ws: WebSocket;
  frames: number;
  bytes: number;
  updates: number;
  doneAt: number | undefined;
  /** Gateway only: typing off arrived, so nothing more belongs to this turn. */
  settled: boolean;
}

interface RunResult {
  side: Side;
  ms: number;
  frames: number;
  textBytes: number;
  wireBytes: number;
  updatesPerDevice: number;
  loopP50Ms: number;
  loopP99Ms: number;
  loopMaxMs: number;
  serverCpuMs: number;
}

async function connect(side: Side, port: number): Promise<Device[]> {
  const url = side === "bare" ? `ws://127.0.0.1:${port}/` : `ws://127.0.0.1:${port}/ws/gateway`;
  return Promise.all(
    Array.from({ length: DEVICES }, async (_, i) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      const device: Device = { ws, frames: 0, bytes: 0, updates: 0, doneAt: undefined, settled: false };
      await new Promise<void>((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      if (side !== "bare") {
        const ok = new Promise<void>((resolve, reject) => {
          ws.once("message", (data) => {
            const frame = JSON.parse(String(data)) as { type: string };
            if (frame.type === "hello.ok") resolve();
            else reject(new Error(`hello failed: ${String(data)}`));
          });
        });
        ws.send(
          JSON.stringify({
            type: "hello",
            id: "h",
            payload: { token: "", device_id: `dev-${i}`, device_name: `bench ${i}` },
          }),
        );
        await ok;
      }
      ws.on("message", (data: Buffer, isBinary) => {
        if (isBinary) return;
        device.frames++;
        device.bytes += data.byteLength;
        // Every device parses every frame, as a real client must.
        const frame = JSON.parse(data.toString("utf8")) as {
          type: string;
          payload?: { text?: string; final_text?: string; on?: boolean };
        };
        if (frame.type === "message.update") {
          device.updates++;
          if (side === "bare" && frame.payload?.text?.length === ANSWER_CHARS) device.doneAt = performance.now();
        } else if (frame.type === "message.stop" && frame.payload?.final_text?.length === ANSWER_CHARS) {
          device.doneAt = performance.now();
        } else if (frame.type === "typing" && frame.payload?.on === false) {
          device.settled = true;
        }
      });
      return device;
    }),
  );
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

let turn = 0;

async function runOnce(side: Side, server: Server, devices: Device[]): Promise<RunResult> {
  for (const d of devices) Object.assign(d, { frames: 0, bytes: 0, updates: 0, doneAt: undefined, settled: false });
  // Let the previous run's garbage and sockets settle before measuring.
  await new Promise((resolve) => setTimeout(resolve, 200));
  await server.request({ kind: "measure-start" }, 10_000);
  const sender = devices[0]!.ws;
  const text = userText();
  const t0 = performance.now();
  if (side === "bare") sender.send(JSON.stringify({ text }));
  else
    sender.send(
      JSON.stringify({
        type: "message.send",
        id: `s${++turn}`,
        payload: { chat_id: "default", text, client_msg_id: `bench-${turn}` },
      }),
    );
  await until(
    () => devices.every((d) => d.doneAt !== undefined),
    RUN_TIMEOUT_MS,
    `${side}: final text on every device`,
  );
  const ms = Math.max(...devices.map((d) => d.doneAt!)) - t0;
  if (side !== "bare")
    await until(() => devices.every((d) => d.settled), 10_000, `${side}: typing off on every device`);
  const stats = await server.request({ kind: "measure-stop" }, 10_000);
  if (stats.kind !== "stats") throw new Error(`expected stats, got ${stats.kind}`);
  const sum = (f: (d: Device) => number) => devices.reduce((n, d) => n + f(d), 0);
  return {
    side,
    ms,
    frames: sum((d) => d.frames),
    textBytes: sum((d) => d.bytes),
    wireBytes: stats.wireBytes,
    updatesPerDevice: sum((d) => d.updates) / DEVICES,
    loopP50Ms: stats.loopP50Ms,
    loopP99Ms: stats.loopP99Ms,
    loopMaxMs: stats.loopMaxMs,
    serverCpuMs: stats.cpuMs,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const best = (xs: number[]) => Math.min(...xs);

interface Summary {
  side: Side;
  runs: number;
  msMedian: number;
  msBest: number;
  framesPerDevice: number;
  updatesPerDevice: number;
  textBytes: number;
  wireBytes: number;
  wireBytesPerDevice: number;
  loopP99MsMedian: number;
  loopP99MsBest: number;
  loopMaxMsMedian: number;
  serverCpuMsMedian: number;
  raw: RunResult[];
}

function summarise(side: Side, runs: RunResult[]): Summary {
  const m = (f: (r: RunResult) => number) => median(runs.map(f));
  return {
    side,
    runs: runs.length,
    msMedian: m((r) => r.ms),
    msBest: best(runs.map((r) => r.ms)),
    framesPerDevice: m((r) => r.frames) / DEVICES,
    updatesPerDevice: m((r) => r.updatesPerDevice),
    textBytes: m((r) => r.textBytes),
    wireBytes: m((r) => r.wireBytes),
    wireBytesPerDevice: m((r) => r.wireBytes) / DEVICES,
    loopP99MsMedian: m((r) => r.loopP99Ms),
    loopP99MsBest: best(runs.map((r) => r.loopP99Ms)),
    loopMaxMsMedian: m((r) => r.loopMaxMs),
    serverCpuMsMedian: m((r) => r.serverCpuMs),
    raw: runs,
  };
}

const LABEL: Record<Side, string> = {
  gateway: "gateway (delayMs 0)",
  bare: "bare ws, full text every delta",
  paced: "gateway (delayMs 15, default pace)",
};

interface Results {
  runs: number;
  pacedRuns: number;
  results: Map<Side, RunResult[]>;
}

/** Starts the three servers and their devices, then a warm-up and `runs` alternating runs per side, and the paced runs. */
async function measure(runs: number, pacedRuns: number): Promise<Results> {
  const sides: Side[] = ["gateway", "bare"];
  const servers = new Map<Side, Server>();
  const devices = new Map<Side, Device[]>();
  const results = new Map<Side, RunResult[]>([
    ["gateway", []],
    ["bare", []],
    ["paced", []],
  ]);
  const run = (side: Side) => runOnce(side, servers.get(side)!, devices.get(side)!);
  try {
    for (const side of [...sides, "paced" as const]) {
      const server: Server = new ServerChild(serverFile, [side, String(CHUNK_CHARS)], `server ${side}`);
      servers.set(side, server);
      devices.set(side, await connect(side, await server.ready));
    }
    // Warm-up (JIT, first allocations), then the two sides alternate so machine noise hits both.
    for (const side of sides) await run(side);
    for (let i = 0; i < runs; i++) {
      for (const side of sides) {
        const r = await run(side);
        results.get(side)!.push(r);
        console.error(
          `fanout: ${side} run ${i + 1}/${runs}: ${r.ms.toFixed(0)} ms, ${(r.wireBytes / 1e6).toFixed(2)} MB, loop p99 ${r.loopP99Ms.toFixed(1)} ms`,
        );
      }
    }
    for (let i = 0; i < pacedRuns; i++) {
      const r = await run("paced");
      results.get("paced")!.push(r);
      console.error(
        `fanout: paced run ${i + 1}/${pacedRuns}: ${r.ms.toFixed(0)} ms, ${r.updatesPerDevice} updates per device`,
      );
    }
  } finally {
    for (const list of devices.values()) for (const d of list) d.ws.terminate();
    await Promise.all([...servers.values()].map((s) => s.stop()));
  }
  return { runs, pacedRuns, results };
}

/** The Markdown table, the targets and the raw JSON. */
function report({ runs, pacedRuns, results }: Results): void {
  const gateway = summarise("gateway", results.get("gateway")!);
  const bare = summarise("bare", results.get("bare")!);
  const paced = summarise("paced", results.get("paced")!);
  const mb = (n: number) => (n / 1e6).toFixed(3);
  console.log(
    `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), ${DEVICES} devices of one owner, ` +
      `${ANSWER_CHARS}-character answer in ${CHUNK_CHARS}-character deltas; ${runs} measured runs per side after a warm-up ` +
      `(median, best), ${pacedRuns} paced run(s).\n`,
  );
  console.log(
    "| side | time to final text on all devices, median (best) | frames per device | message.update per device | text bytes (all devices) | wire bytes (all devices) | wire bytes per device | server loop delay p99, median (best) | loop max, median | server CPU, median |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const s of [gateway, bare, paced]) {
    console.log(
      `| ${LABEL[s.side]} | ${s.msMedian.toFixed(0)} ms (${s.msBest.toFixed(0)}) | ${s.framesPerDevice.toFixed(1)} | ${s.updatesPerDevice.toFixed(1)} | ${mb(s.textBytes)} MB | ${mb(s.wireBytes)} MB | ${(s.wireBytesPerDevice / 1e3).toFixed(1)} kB | ${s.loopP99MsMedian.toFixed(1)} ms (${s.loopP99MsBest.toFixed(1)}) | ${s.loopMaxMsMedian.toFixed(1)} ms | ${s.serverCpuMsMedian.toFixed(0)} ms |`,
    );
  }
  const bytesShare = gateway.wireBytes / bare.wireBytes;
  const speed = gateway.msMedian <= bare.msMedian;
  console.log(
    `\nTargets: gateway no slower than bare: ${speed ? "met" : "NOT met"} (${gateway.msMedian.toFixed(0)} vs ${bare.msMedian.toFixed(0)} ms median); ` +
      `at most 10% of the bare bytes: ${bytesShare <= 0.1 ? "met" : "NOT met"} (${(bytesShare * 100).toFixed(2)}% on the wire, ` +
      `${((gateway.textBytes / bare.textBytes) * 100).toFixed(2)}% of text bytes).`,
  );
  console.log(
    `Bare delivery rate: ${((bare.framesPerDevice * DEVICES) / (bare.msMedian / 1000)).toFixed(0)} frames/s; ` +
      `paced gateway: ${paced.updatesPerDevice.toFixed(1)} message.update per device instead of ${ANSWER_CHARS / CHUNK_CHARS} deltas.`,
  );
  console.log(`\n${JSON.stringify({ gateway, bare, paced }, null, 1)}`);
}

const args = process.argv.slice(2);
const quick = args.includes("--quick") || Boolean(process.env.BENCH_QUICK);
const runsArg = args.find((a) => a.startsWith("--runs="));
const runs = runsArg ? Math.max(1, Math.min(100, Number(runsArg.slice(7)) || 1)) : quick ? 2 : 5;
report(await measure(runs, quick ? 1 : 2));
