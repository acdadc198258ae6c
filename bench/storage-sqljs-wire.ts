/**
 * The sql.js storage under a gateway, measured over the wire: does the process that serves sockets
 * ever wait for sql.js? Each design runs as its own serving process (bench/sqljs-wire-server.ts)
 * with ws clients in this process, alternating design by design:
 *
 * - grow: a store filled from empty past `--messages` (default 100,000) by `--writers` ws clients
 *   (default 16) sending `message.send` as fast as each is answered (each send stores the user's
 *   message and the demo runtime's answer), snapshots happening as they come; the serving
 *   process's event-loop delay (perf_hooks.monitorEventLoopDelay), commit and round-trip latency;
 * - large: a copy of a prebuilt folder (`--corpus`, see bench/sqljs-corpus-1m.ts) opened; the time
 *   from `open()` (and from the process's start) to the first `hello.ok`, then writes by the same
 *   writers and searches one at a time, with the same figures and both processes' peak RSS.
 *
 *   node --import tsx bench/storage-sqljs-wire.ts --base=/work/wt/base-sqljs --corpus=/tmp/cg-corpus/1m
 *   node --import tsx bench/storage-sqljs-wire.ts --corpus=/tmp/cg-corpus/1m --phases=large --rate=300
 *
 * Options: `--writers` (16), `--rate` (sends a second across the writers on a schedule; default:
 * each writer sends when answered), `--messages` (grow target), `--largeSends` (2,000),
 * `--snapshotBytes` (a snapshot every so many journal bytes, default 4 MiB; `default`: the
 * storage's own thresholds), `--rounds`, `--phases=large`.
 *
 * `--base` is a worktree of the design to compare with (with node_modules); the server script is
 * copied into it and run there, so each design runs its own code. Prints JSON per phase.
 * @module
 */
import { execFileSync, fork, type ChildProcess } from "node:child_process";
import { copyFile, cp, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { CHATS, COMMON, percentiles, RARE } from "./corpus.js";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const here = fileURLToPath(new URL("..", import.meta.url));
const target = Number(args.messages ?? 100_000);
const writers = Number(args.writers ?? 16);
/** Sends per second across all writers, on a schedule (see {@link write}); 0: as fast as answered. */
const rate = Number(args.rate ?? 0);
const designs: Array<{ name: string; root: string }> = [{ name: "database process", root: here }];
if (args.base) designs.push({ name: "base (--base)", root: args.base });

interface Server {
  child: ChildProcess;
  url: string;
  t0: number;
  timeOrigin: number;
  ask(t: string): Promise<Record<string, unknown>>;
}

async function startServer(root: string, dir: string, env: NodeJS.ProcessEnv = {}): Promise<Server> {
  if (root !== here) await copyFile(join(here, "bench/sqljs-wire-server.ts"), join(root, "bench/sqljs-wire-server.ts"));
  const child = fork(join(root, "bench/sqljs-wire-server.ts"), [dir], {
    cwd: root,
    env: { ...process.env, ...env },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const first = await new Promise<{ port: number; t0: number; timeOrigin: number }>((resolve, reject) => {
    child.once("message", resolve);
    child.once("exit", (code) => reject(new Error(`server exited ${code}`)));
  });
  const ask = (t: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      child.once("message", resolve);
      child.send({ t });
    });
  return { child, url: `ws://127.0.0.1:${first.port}/ws/gateway`, t0: first.t0, timeOrigin: first.timeOrigin, ask };
}

async function stop(server: Server): Promise<void> {
  const exited = new Promise((resolve) => server.child.once("exit", resolve));
  server.child.send({ t: "close" });
  await exited;
}

/** A device whose requests resolve with the frame that carries their id. */
class Device {
  readonly ws: WebSocket;
  readonly #waiting = new Map<string, (frame: { type: string }) => void>();
  #next = 0;
  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { id?: string; type: string };
      if (frame.id) this.#waiting.get(frame.id)?.(frame);
    });
  }
  async hello(name: string) {
    await new Promise((resolve, reject) => this.ws.once("open", resolve).once("error", reject));
    return this.request("hello", { token: "", device_id: name, device_name: name });
  }
  request(type: string, payload: unknown): Promise<{ type: string }> {
    const id = `q${++this.#next}`;
    return new Promise((resolve) => {
      this.#waiting.set(id, (f) => {
        this.#waiting.delete(id);
        resolve(f);
      });
      this.ws.send(JSON.stringify({ type, id, payload }));
    });
  }
}

/**
 * `writers` devices sending until `sends` more messages are acknowledged; round trips in ms. By
 * default each device sends as soon as its last send is answered (a closed loop: the store is
 * as busy as the machine lets it be, so latencies are queueing). With `--rate`, the devices send
 * `rate` messages a second between them on a fixed schedule, whether or not earlier sends were
 * answered (an open loop, as people and models send): latencies at a given load.
 */
async function write(devices: Device[], sends: number) {
  const latencies: number[] = [];
  let left = sends;
  let refused = 0;
  const send = async (d: Device, w: number, n: number) => {
    const t = performance.now();
    const reply = await d.request("message.send", {
      chat_id: `chat${(w + n) % CHATS}`,
      text: `writer ${w} says ${n} ${COMMON}`,
    });
    latencies.push(performance.now() - t);
    if (reply.type !== "message") refused++;
  };
  const started = performance.now();
  if (rate > 0) {
    const every = (1000 * devices.length) / rate;
    const sent: Array<Promise<void>> = [];
    await Promise.all(
      devices.map(async (d, w) => {
        for (let k = 0; left > 0; k++) {
          const at = started + (w / devices.length + k) * every;
          await new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())));
          if (left-- > 0) sent.push(send(d, w, left));
        }
      }),
    );
    await Promise.all(sent);
  } else {
    await Promise.all(
      devices.map(async (d, w) => {
        while (left-- > 0) await send(d, w, left);
      }),
    );
  }
  return {
    roundTrip: percentiles(latencies),
    refused,
    sendsPerSec: Math.round(sends / ((performance.now() - started) / 1000)),
  };
}

async function connect(url: string, n: number, tag: string): Promise<Device[]> {
  const devices = Array.from({ length: n }, () => new Device(url));
  await Promise.all(devices.map((d, i) => d.hello(`${tag}-${i}`)));
  return devices;
}

async function grow(design: { name: string; root: string }) {
  const dir = await mkdtemp(join(tmpdir(), "cg-wire-grow-"));
  const server = await startServer(design.root, dir);
  const devices = await connect(server.url, writers, "w");
  await server.ask("reset");
  // Each send stores two messages: the user's and the answer.
  const result = await write(devices, Math.ceil(target / 2));
  const report = await server.ask("report");
  for (const d of devices) d.ws.close();
  await stop(server);
  await rm(dir, { recursive: true, force: true });
  return { design: design.name, phase: `grow 0 -> ${target}`, ...result, ...report };
}

async function large(design: { name: string; root: string }, corpus: string) {
  const dir = await mkdtemp(join(tmpdir(), "cg-wire-large-"));
  await cp(corpus, dir, { recursive: true, filter: (src) => !src.endsWith("LOCK") });
  // The copy's dirty pages (1.5 GB at a million) would otherwise reach the disk during the run
  // and hold up the journal's fsyncs for hundreds of ms: written back now, before the clock starts.
  execFileSync("sync");
  // A snapshot every 4 MiB of journal, so that the writes below meet a few at this size.
  const server = await startServer(
    design.root,
    dir,
    args.snapshotBytes === "default" ? {} : { SNAPSHOT_BYTES: String(Number(args.snapshotBytes ?? 4 * 1024 * 1024)) },
  );
  const [first] = await connect(server.url, 1, "first");
  const helloAt = Date.now();
  const startup = { fromOpenMs: helloAt - server.t0, fromProcessStartMs: Math.round(helloAt - server.timeOrigin) };
  const devices = [first, ...(await connect(server.url, writers - 1, "w"))];
  await server.ask("reset");
  const writes = await write(devices, Number(args.largeSends ?? 2000));
  const searchRoundTrips: Record<string, unknown> = {};
  for (const [name, payload] of [
    ["rare", { query: RARE, scope: "all" }],
    ["common, all chats", { query: COMMON, scope: "all" }],
    ["common, one chat", { query: COMMON, scope: "chat", chat_id: "chat7" }],
  ] as const) {
    const samples: number[] = [];
    for (let k = 0; k < 100; k++) {
      const t = performance.now();
      await first.request("search", { ...payload, limit: 20 });
      samples.push(performance.now() - t);
    }
    searchRoundTrips[name] = percentiles(samples);
  }
  const report = await server.ask("report");
  for (const d of devices) d.ws.close();
  await stop(server);
  await rm(dir, { recursive: true, force: true });
  return { design: design.name, phase: `large (${corpus})`, startup, ...writes, searchRoundTrips, ...report };
}

const rounds = Number(args.rounds ?? 1);
console.log(JSON.stringify({ loadAverageBefore: loadavg().map((l) => +l.toFixed(2)), writers, rate, target }));
for (let round = 0; round < rounds; round++) {
  for (const design of designs) {
    if (args.phases !== "large") console.log(JSON.stringify(await grow(design)));
    if (args.corpus) console.log(JSON.stringify(await large(design, args.corpus)));
  }
}
console.log(JSON.stringify({ loadAverageAfter: loadavg().map((l) => +l.toFixed(2)) }));
