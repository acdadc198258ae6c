/**
 * Fan-out of a paced answer (the streaming case beside the burst of bench/fanout.ts): one owner
 * with 100 connected devices, a 4,000-character answer at a model's pace, 10 characters every
 * 10 ms. What each device receives, by how it connects:
 *
 * - `full`: full-text `message.update`s (no `caps.delta`), no compression: the baseline.
 * - `delta`: `caps.delta: true` (docs/PROTOCOL.md §12), no compression, at the default pace (an
 *   update per 100 ms to a delta device, `deltaUpdateIntervalMs`).
 * - `delta-thread`: the same, the answer streamed in a thread of a created channel, so every frame
 *   carries a real `chat_id` and `thread_id` (the flat lane's are `"default"` and `null`).
 * - `delta-50ms`: the same from a gateway with `deltaUpdateIntervalMs: 50`, the turn's own pace.
 * - `deflate`: full text over permessage-deflate with the ws adapter's bounded settings
 *   (`perMessageDeflate: true`).
 * - `deflate-ws-default`: full text over permessage-deflate with `ws`'s own zlib defaults
 *   (15-bit window, memory level 8, level 6), from a second server.
 *
 *   node --import tsx bench/fanout-stream.ts            # 1 warm-up + 3 measured runs per side
 *   node --import tsx bench/fanout-stream.ts --quick    # 1 warm-up + 1 measured run per side
 *
 * Each side is its own owner (token) on a server child process; this process plays the devices,
 * parses every frame and, for delta devices, joins the appends and checks them against
 * `final_text`. Per run: text bytes as the devices receive them (inflated), bytes the server wrote
 * to that side's sockets, the server's CPU time (process.cpuUsage around the run) and its RSS
 * change. Prints a Markdown table and the raw JSON; figures go to bench/NOTES.md, and the newest
 * to bench/RESULTS.md.
 * @module
 */
import { fork, type ChildProcess } from "node:child_process";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { createGateway, tokenAuthenticator, type AgentRuntime } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import { connect, laneOf, type Device } from "./fanout-stream-devices.js";

const DEVICES = 100;
const ANSWER_CHARS = 4000;
const CHUNK_CHARS = 10;
const PACE_MS = 10;
const self = fileURLToPath(import.meta.url);

export type Side = "full" | "delta" | "delta-thread" | "delta-50ms" | "deflate" | "deflate-ws-default";
const SIDES: Side[] = ["full", "delta", "delta-thread", "delta-50ms", "deflate", "deflate-ws-default"];
/**
 * The server children: `bounded` offers the adapter's bounded deflate, `wsDefault` ws's defaults,
 * `turnPace` sends delta devices an update as often as the turn publishes one (`deltaUpdateIntervalMs: 50`, default 100).
 */
type ServerKind = "bounded" | "wsDefault" | "turnPace";
const SERVER_OF: Record<Side, ServerKind> = {
  full: "bounded",
  delta: "bounded",
  "delta-thread": "bounded",
  "delta-50ms": "turnPace",
  deflate: "bounded",
  "deflate-ws-default": "wsDefault",
};

type ToServer = { kind: "measure-start"; side: Side } | { kind: "measure-stop" } | { kind: "exit" };
type FromServer =
  | { kind: "ready"; port: number }
  | { kind: "started" }
  | { kind: "stats"; wireBytes: number; cpuMs: number; rssDeltaKb: number };

/** A 4,000-character answer of English-like words that does not repeat itself (a repeated phrase would flatter compression). */
function answerText(): string {
  const words =
    "the of and model answer stream device token gateway quick brown fox jumps over lazy dog river mountain signal cloud paper window garden market silver morning evening question reason number system future history water light".split(
      " ",
    );
  let seed = 42;
  let text = "";
  while (text.length < ANSWER_CHARS) {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    text += `${words[seed % words.length]}${seed % 11 === 0 ? ". " : " "}`;
  }
  return text.slice(0, ANSWER_CHARS);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Answers every message with the same text, 10 characters every 10 ms. */
function pacedRuntime(answer: string): AgentRuntime {
  return {
    async *turn(input) {
      for (let at = 0; at < answer.length && !input.signal.aborted; at += CHUNK_CHARS) {
        yield { type: "text", delta: answer.slice(at, at + CHUNK_CHARS) };
        await sleep(PACE_MS);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Server children

async function server(kind: ServerKind): Promise<void> {
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: pacedRuntime(answerText()),
    authenticator: tokenAuthenticator(Object.fromEntries(SIDES.map((s) => [s, `owner-${s}`]))),
    logger: { info() {}, warn() {}, error() {} },
    maxConnectionsPerOwner: 10_000,
    maxConnectionsPerIp: 10_000,
    // Every device connects from 127.0.0.1: lift the per-address caps meant for the internet.
    maxHellosInFlight: 10_000,
    connectRateLimit: { perSecond: 1e6, burst: 1e6 },
    rateLimitPerAddress: { perSecond: 1e6, burst: 1e6 },
    rateLimitPerOwner: { perSecond: 1e6, burst: 1e6 },
    ...(kind === "turnPace" ? { deltaUpdateIntervalMs: 50 } : {}),
  });
  await gateway.start();
  const http1 = http.createServer((_req, res) => res.writeHead(404).end());
  attachWebSocket(gateway, {
    server: http1,
    path: "/ws/gateway",
    // All 500 devices are sockets from 127.0.0.1: lift the per-address socket cap (default 256).
    paceSockets: { maxSocketsPerAddress: Number.POSITIVE_INFINITY },
    perMessageDeflate: kind === "bounded" ? true : { threshold: 1024 },
  });
  const sockets = new Map<Side, Set<Socket>>(SIDES.map((s) => [s, new Set()]));
  http1.on("upgrade", (req, socket: Socket) => {
    const side = new URL(req.url ?? "/", "http://x").searchParams.get("side") as Side;
    sockets.get(side)?.add(socket);
  });
  let measured: Side = "full";
  let cpu = process.cpuUsage();
  let written = 0;
  let rss = 0;
  const bytesWritten = () => [...sockets.get(measured)!].reduce((n, s) => n + s.bytesWritten, 0);
  process.on("message", (m: ToServer) => {
    if (m.kind === "measure-start") {
      measured = m.side;
      (globalThis as { gc?: () => void }).gc?.();
      written = bytesWritten();
      rss = process.memoryUsage().rss;
      cpu = process.cpuUsage();
      process.send!({ kind: "started" } satisfies FromServer);
    } else if (m.kind === "measure-stop") {
      const used = process.cpuUsage(cpu);
      process.send!({
        kind: "stats",
        wireBytes: bytesWritten() - written,
        cpuMs: (used.user + used.system) / 1000,
        rssDeltaKb: (process.memoryUsage().rss - rss) / 1024,
      } satisfies FromServer);
    } else if (m.kind === "exit") process.exit(0);
  });
  process.on("disconnect", () => process.exit(0));
  await new Promise<void>((resolve) => http1.listen(0, "127.0.0.1", resolve));
  process.send!({ kind: "ready", port: (http1.address() as AddressInfo).port } satisfies FromServer);
}

// ---------------------------------------------------------------------------------------------
// This process: the devices

class ServerChild {
  readonly #child: ChildProcess;
  readonly #waiting: Array<(m: FromServer) => void> = [];
  readonly ready: Promise<number>;

  constructor(kind: ServerKind) {
    // --expose-gc: each run starts after a collection, so one side's garbage is not paid for by the next.
    this.#child = fork(self, ["--server", kind], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      execArgv: [...process.execArgv, "--expose-gc"],
    });
    this.#child.on("message", (m: FromServer) => this.#waiting.shift()?.(m));
    this.ready = this.#next().then((m) =>
      m.kind === "ready" ? m.port : Promise.reject(new Error(`expected ready, got ${m.kind}`)),
    );
  }

  #next(): Promise<FromServer> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("server child did not answer")), 30_000);
      this.#waiting.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }

  request(m: ToServer): Promise<FromServer> {
    const answer = this.#next();
    this.#child.send(m);
    return answer;
  }

  stop(): void {
    this.#child.send({ kind: "exit" } satisfies ToServer);
  }
}

interface RunResult {
  side: Side;
  textBytesPerDevice: number;
  updateBytesPerDevice: number;
  updatesPerDevice: number;
  wireBytesPerDevice: number;
  serverCpuMs: number;
  rssDeltaKb: number;
  ms: number;
}

/** Where each side's answers stream: the default channel's flat lane, or (`delta-thread`) a thread of a created channel, whose real ids every frame carries. */
const lanes = new Map<Side, { chat_id: string; thread_id: string | null }>();

let sent = 0;

async function runOnce(side: Side, server: ServerChild, devices: Device[]): Promise<RunResult> {
  for (const d of devices) Object.assign(d, { bytes: 0, updateBytes: 0, updates: 0, stopped: false, consistent: true });
  await sleep(200);
  await server.request({ kind: "measure-start", side });
  const t0 = performance.now();
  devices[0]!.ws.send(
    JSON.stringify({
      type: "message.send",
      id: `s${++sent}`,
      payload: { ...lanes.get(side), text: `question ${sent}` },
    }),
  );
  const deadline = t0 + 60_000;
  while (!devices.every((d) => d.stopped)) {
    if (performance.now() > deadline) throw new Error(`${side}: no message.stop on every device`);
    await sleep(5);
  }
  const ms = performance.now() - t0;
  // typing off follows the stop: let it arrive so every run counts the same frames.
  await sleep(50);
  const stats = await server.request({ kind: "measure-stop" });
  if (stats.kind !== "stats") throw new Error(`expected stats, got ${stats.kind}`);
  const broken = devices.filter((d) => !d.consistent).length;
  if (broken) throw new Error(`${side}: ${broken} devices hold a text that is not the answer`);
  const per = (f: (d: Device) => number) => devices.reduce((n, d) => n + f(d), 0) / DEVICES;
  return {
    side,
    textBytesPerDevice: per((d) => d.bytes),
    updateBytesPerDevice: per((d) => d.updateBytes),
    updatesPerDevice: per((d) => d.updates),
    wireBytesPerDevice: stats.wireBytes / DEVICES,
    serverCpuMs: stats.cpuMs,
    rssDeltaKb: stats.rssDeltaKb,
    ms,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === "--server") return server(args[1] as ServerKind);
  const runs = args.includes("--quick") || process.env.BENCH_QUICK ? 1 : 3;
  const floor = Buffer.byteLength(answerText(), "utf8");
  const servers: Record<ServerKind, ServerChild> = {
    bounded: new ServerChild("bounded"),
    wsDefault: new ServerChild("wsDefault"),
    turnPace: new ServerChild("turnPace"),
  };
  const devices = new Map<Side, Device[]>();
  const results = new Map<Side, RunResult[]>(SIDES.map((s) => [s, []]));
  const load = loadavg()[0]!;
  /** RSS change over each side's first answer (the warm-up), when per-connection zlib contexts are created. */
  const firstRss = new Map<Side, number>();
  try {
    for (const side of SIDES) {
      devices.set(side, await connect(side, await servers[SERVER_OF[side]].ready, DEVICES));
      lanes.set(side, await laneOf(side, devices.get(side)!));
    }
    for (const side of SIDES)
      firstRss.set(side, (await runOnce(side, servers[SERVER_OF[side]], devices.get(side)!)).rssDeltaKb);
    for (let i = 0; i < runs; i++) {
      for (const side of SIDES) {
        const r = await runOnce(side, servers[SERVER_OF[side]], devices.get(side)!);
        results.get(side)!.push(r);
        console.error(
          `fanout-stream: ${side} run ${i + 1}/${runs}: ${(r.textBytesPerDevice / 1000).toFixed(1)} kB text, ${(r.wireBytesPerDevice / 1000).toFixed(1)} kB wire per device, CPU ${r.serverCpuMs.toFixed(0)} ms`,
        );
      }
    }
  } finally {
    for (const list of devices.values()) for (const d of list) d.ws.terminate();
    for (const child of Object.values(servers)) child.stop();
  }
  const m = (side: Side, f: (r: RunResult) => number) => median(results.get(side)!.map(f));
  const baseCpu = m("full", (r) => r.serverCpuMs);
  console.log(
    `Node ${process.version}, ${cpus().length} CPUs, load average ${load.toFixed(1)} at the start; ${DEVICES} devices per side, ` +
      `a ${ANSWER_CHARS}-character answer (${floor} bytes: the floor) in ${CHUNK_CHARS}-character pieces every ${PACE_MS} ms; ` +
      `median of ${runs} measured run(s) per side after a warm-up, sides alternating.\n`,
  );
  console.log(
    "| side | text bytes per device | × floor | of which message.update (count) | wire bytes per device | × floor | server CPU per run | per device | CPU / full | RSS change, first answer |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const side of SIDES) {
    const text = m(side, (r) => r.textBytesPerDevice);
    const wire = m(side, (r) => r.wireBytesPerDevice);
    const cpu = m(side, (r) => r.serverCpuMs);
    console.log(
      `| ${side} | ${(text / 1000).toFixed(1)} kB | ${(text / floor).toFixed(2)} | ${(m(side, (r) => r.updateBytesPerDevice) / 1000).toFixed(1)} kB (${m(side, (r) => r.updatesPerDevice).toFixed(0)}) | ${(wire / 1000).toFixed(1)} kB | ${(wire / floor).toFixed(2)} | ${cpu.toFixed(0)} ms | ${((cpu / DEVICES) * 1000).toFixed(0)} µs | ${(cpu / baseCpu).toFixed(2)} | ${firstRss.get(side)!.toFixed(0)} KiB |`,
    );
  }
  const worst =
    Math.max(
      m("delta", (r) => r.wireBytesPerDevice),
      m("delta-thread", (r) => r.wireBytesPerDevice),
    ) / floor;
  console.log(
    `\nTarget: delta devices (flat lane and thread) at most 4× the answer on the wire: ${worst <= 4 ? "met" : "NOT met"} (${worst.toFixed(2)}× at worst).`,
  );
  console.log(`\n${JSON.stringify(Object.fromEntries(results), null, 1)}`);
}

await main();
