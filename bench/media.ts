/**
 * Media benchmark (issue #3): upload and pull of a 50 MiB file over the gateway's WebSocket,
 * against copying the same file with node:fs streams in the same run, and the gateway's RSS.
 *
 *   node --import tsx bench/media.ts            # 5 rounds of a copy, an upload and a pull
 *   node --import tsx bench/media.ts --quick    # 1 of each
 *   node --import tsx bench/media.ts --mib=200  # another file size
 *   BENCH_SERVER_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node --import tsx bench/media.ts   # profile the gateway
 *
 * Each round starts a fresh gateway (memory storage, `fsMediaStore` in a temporary folder,
 * `maxMediaBytes` 64 MiB) in a child process, warms it up with a 2 MiB upload and pull, then
 * samples its memory every 10 ms (`process.memoryUsage()`: RSS, Buffer memory) from just before
 * `media.upload.start` (after a forced GC) until `media.upload.ack`, and again during the pull; it
 * also tracks the bytes its ws server received that the media store has not written yet. This
 * process is the device: `media.upload.start`, 256 KiB binary chunks (whenever `ws.bufferedAmount`
 * rises above 1 MiB it waits until everything queued so far is written), `media.upload.end` with
 * the sha256, then `media.pull`, checking every chunk's offset and the sha256 of what comes back.
 * Prints a Markdown table and the raw JSON. Figures go to bench/NOTES.md, and the newest to bench/RESULTS.md.
 * @module
 */
import { fork, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, open, rm, unlink } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pipeline } from "node:stream/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { createGateway, type MediaStore } from "chat-gateway";
import { decodeChunk, encodeChunk } from "chat-gateway/protocol";
import { fsMediaStore } from "chat-gateway/media/fs";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";

const MiB = 1024 * 1024;
const mibArg = process.argv.find((a) => a.startsWith("--mib="));
/** The file size: 50 MiB, or `--mib=N` (1 to 1024). */
const FILE_BYTES = (mibArg ? Math.max(1, Math.min(1024, Math.floor(Number(mibArg.slice(6))) || 50)) : 50) * MiB;
const CHUNK_BYTES = 256 * 1024;
const HIGH_WATER = 1024 * 1024;
const SAMPLE_MS = 10;
/** The warm-up file uploaded and pulled before each measured round. */
const WARM_BYTES = 2 * MiB;
const STEP_TIMEOUT_MS = 120_000;
const self = fileURLToPath(import.meta.url);

/** Whether ws masks and unmasks with the native `bufferutil` addon or its JavaScript fallback. */
function masking(): string {
  if (process.env.WS_NO_BUFFER_UTIL) return "JavaScript (WS_NO_BUFFER_UTIL)";
  try {
    createRequire(createRequire(import.meta.url).resolve("ws")).resolve("bufferutil");
    return "bufferutil (native)";
  } catch {
    return "JavaScript fallback (no bufferutil)";
  }
}

type ToServer = { kind: "measure-start" } | { kind: "measure-stop" } | { kind: "exit" };
type FromServer =
  | { kind: "ready"; port: number }
  | { kind: "started"; baselineRss: number }
  | {
      kind: "stats";
      baselineRss: number;
      peakRss: number;
      /** Largest growth of Buffer/ArrayBuffer memory over its value at the baseline. */
      peakArrayBuffersGrowth: number;
      /** Most bytes the ws server had received but the media store had not yet written. */
      peakQueuedBytes: number;
      samples: number;
      loopP99Ms: number;
      loopMaxMs: number;
      cpuMs: number;
    };

// ---------------------------------------------------------------------------------------------
// The gateway (child process)

async function server(dir: string): Promise<void> {
  const quiet = { info() {}, warn() {}, error() {} };
  // Counts what the store has written, so the sampler can tell queued chunks from garbage.
  let written = 0;
  let received = 0;
  const store = fsMediaStore({ dir });
  const countingStore: MediaStore = {
    read: (owner, mediaId) => store.read(owner, mediaId),
    delete: (owner, ids) => store.delete(owner, ids),
    async createWriter(owner, mediaId) {
      const writer = await store.createWriter(owner, mediaId);
      return {
        write: (chunk) =>
          writer.write(chunk).then(() => {
            written += chunk.byteLength;
          }),
        commit: () => writer.commit(),
        abort: () => writer.abort(),
      };
    },
  };
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: demoRuntime(),
    mediaStore: countingStore,
    maxMediaBytes: Math.max(64 * MiB, FILE_BYTES),
    logger: quiet,
  });
  await gateway.start();
  const httpServer = http.createServer((_req, res) => res.writeHead(404).end());
  const transport = attachWebSocket(gateway, { server: httpServer, path: "/ws/gateway" });
  const counted = new WeakSet<object>();
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));

  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let sampler: NodeJS.Timeout | undefined;
  let baselineRss = 0;
  let peakRss = 0;
  let baselineArrayBuffers = 0;
  let peakArrayBuffers = 0;
  let peakQueued = 0;
  let samples = 0;
  let cpu = process.cpuUsage();
  const sample = () => {
    const usage = process.memoryUsage();
    samples++;
    if (usage.rss > peakRss) peakRss = usage.rss;
    if (usage.arrayBuffers > peakArrayBuffers) peakArrayBuffers = usage.arrayBuffers;
    // Chunk payloads, not headers; near enough for a queue depth.
    if (received - written > peakQueued) peakQueued = received - written;
  };
  process.on("message", async (m: ToServer) => {
    if (m.kind === "measure-start") {
      for (const ws of transport.wss.clients) {
        if (counted.has(ws)) continue;
        counted.add(ws);
        ws.on("message", (data: Buffer, isBinary) => {
          if (isBinary) received += data.byteLength;
        });
      }
      received = written = peakQueued = 0;
      (globalThis as { gc?: () => void }).gc?.();
      const usage = process.memoryUsage();
      baselineRss = peakRss = usage.rss;
      baselineArrayBuffers = peakArrayBuffers = usage.arrayBuffers;
      samples = 0;
      sampler = setInterval(sample, SAMPLE_MS);
      cpu = process.cpuUsage();
      histogram.reset();
      histogram.enable();
      // The histogram records a delay only from its second tick on: prime it before the work starts.
      await new Promise((resolve) => setTimeout(resolve, 20));
      process.send!({ kind: "started", baselineRss } satisfies FromServer);
    } else if (m.kind === "measure-stop") {
      sample();
      await new Promise((resolve) => setTimeout(resolve, 5));
      clearInterval(sampler);
      histogram.disable();
      const used = process.cpuUsage(cpu);
      process.send!({
        kind: "stats",
        baselineRss,
        peakRss,
        peakArrayBuffersGrowth: peakArrayBuffers - baselineArrayBuffers,
        peakQueuedBytes: peakQueued,
        samples,
        loopP99Ms: histogram.percentile(99) / 1e6,
        loopMaxMs: histogram.max / 1e6,
        cpuMs: (used.user + used.system) / 1000,
      } satisfies FromServer);
    } else if (m.kind === "exit") {
      await gateway.close();
      process.exit(0);
    }
  });
  process.on("disconnect", () => process.exit(0));
  process.send!({ kind: "ready", port: (httpServer.address() as AddressInfo).port } satisfies FromServer);
}

// ---------------------------------------------------------------------------------------------
// The device and the reference copy (this process)

class ServerChild {
  readonly #child: ChildProcess;
  readonly #waiting: Array<{ resolve: (m: FromServer) => void; reject: (e: Error) => void }> = [];

  constructor(dir: string) {
    // --expose-gc: the baseline is taken right after a full GC, so garbage from earlier runs does not hide growth.
    // BENCH_SERVER_ARGS adds Node flags to the server child only (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
    const extra = (process.env.BENCH_SERVER_ARGS ?? "").split(" ").filter(Boolean);
    this.#child = fork(self, ["--server", dir, ...process.argv.filter((a) => a.startsWith("--mib="))], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      execArgv: [...process.execArgv, "--expose-gc", ...extra],
    });
    this.#child.on("message", (m: FromServer) => this.#waiting.shift()?.resolve(m));
    this.#child.on("exit", (code) => {
      for (const w of this.#waiting.splice(0)) w.reject(new Error(`media server exited with ${code}`));
    });
  }

  next(timeoutMs = 30_000): Promise<FromServer> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("media server did not answer")), timeoutMs);
      this.#waiting.push({
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  async request(m: ToServer): Promise<FromServer> {
    const answer = this.next();
    this.#child.send(m);
    return answer;
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once("exit", resolve));
    this.#child.send({ kind: "exit" } satisfies ToServer);
    const timer = setTimeout(() => this.#child.kill(), 5000);
    await exited;
    clearTimeout(timer);
  }
}

interface Frame {
  type: string;
  id?: string;
  payload?: Record<string, unknown>;
}

/** A device connection that hands out text frames by request id and binary chunks to a listener. */
class Device {
  readonly ws: WebSocket;
  readonly #byId = new Map<string, (f: Frame) => void>();
  onBinary: (data: Buffer) => void = () => undefined;
  lastError: Frame | undefined;

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data: Buffer, isBinary) => {
      if (isBinary) return this.onBinary(data);
      const frame = JSON.parse(data.toString("utf8")) as Frame;
      if (frame.type === "error") this.lastError = frame;
      const waiter = frame.id !== undefined ? this.#byId.get(frame.id) : undefined;
      if (waiter) {
        this.#byId.delete(frame.id!);
        waiter(frame);
      }
    });
  }

  static async connect(port: number): Promise<Device> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/gateway`, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    const device = new Device(ws);
    const ok = await device.request("hello", { token: "", device_id: "bench-media", device_name: "media bench" });
    if (ok.type !== "hello.ok") throw new Error(`hello failed: ${JSON.stringify(ok)}`);
    return device;
  }

  #next = 0;
  request(type: string, payload: Record<string, unknown>, timeoutMs = STEP_TIMEOUT_MS): Promise<Frame> {
    const id = `r${++this.#next}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`${type}: no answer in ${timeoutMs} ms (last error: ${JSON.stringify(this.lastError)})`)),
        timeoutMs,
      );
      this.#byId.set(id, (f) => {
        clearTimeout(timer);
        resolve(f);
      });
      this.ws.send(JSON.stringify({ type, id, payload }));
    });
  }

  send(type: string, payload: Record<string, unknown>): void {
    this.ws.send(JSON.stringify({ type, payload }));
  }

  /** Send one binary message; resolves when it has been written to the socket. */
  sendBinary(data: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) =>
      this.ws.send(data, { binary: true }, (error) => (error ? reject(error) : resolve())),
    );
  }
}

async function makeFile(file: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  const handle = await open(file, "w");
  try {
    for (let written = 0; written < size; written += MiB) {
      const piece = randomBytes(Math.min(MiB, size - written));
      hash.update(piece);
      await handle.write(piece);
    }
  } finally {
    await handle.close();
  }
  return hash.digest("hex");
}

async function copyFile(from: string, to: string, sync: boolean): Promise<number> {
  const t0 = performance.now();
  if (sync) {
    // The gateway's commit fsyncs the file (and its folder) before the ack; this is the same cost for the copy.
    await pipeline(createReadStream(from), createWriteStream(to));
    const handle = await open(to, "r+");
    await handle.sync();
    await handle.close();
  } else {
    await pipeline(createReadStream(from), createWriteStream(to));
  }
  const ms = performance.now() - t0;
  await unlink(to);
  return ms;
}

async function upload(device: Device, file: string, size: number, ref: string, sha256: string): Promise<number> {
  const t0 = performance.now();
  device.send("media.upload.start", {
    media_ref: ref,
    kind: "document",
    mime: "application/octet-stream",
    size,
    filename: "bench.bin",
  });
  let offset = 0;
  let lastWrite: Promise<void> = Promise.resolve();
  for await (const piece of createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    lastWrite = device.sendBinary(encodeChunk(ref, offset, piece));
    offset += piece.byteLength;
    // Backpressure: past 1 MiB buffered, wait until everything queued so far is written.
    if (device.ws.bufferedAmount > HIGH_WATER) await lastWrite;
    if (device.lastError) throw new Error(`upload failed: ${JSON.stringify(device.lastError)}`);
  }
  await lastWrite;
  const ack = await device.request("media.upload.end", { media_ref: ref, sha256 });
  if (ack.type !== "media.upload.ack" || ack.payload?.ok !== true)
    throw new Error(`upload not acknowledged: ${JSON.stringify(ack)}`);
  return performance.now() - t0;
}

async function pull(device: Device, size: number, ref: string, sha256: string): Promise<number> {
  const hash = createHash("sha256");
  let received = 0;
  let failure: string | undefined;
  device.onBinary = (data) => {
    const chunk = decodeChunk(data);
    if (chunk.media !== ref || chunk.offset !== received)
      failure ??= `chunk ${chunk.media}@${chunk.offset}, expected ${ref}@${received}`;
    received += chunk.bytes.byteLength;
    hash.update(chunk.bytes);
  };
  const t0 = performance.now();
  const end = await device.request("media.pull", { media_id: ref });
  const ms = performance.now() - t0;
  device.onBinary = () => undefined;
  if (end.type !== "media.pull.end" || end.payload?.ok !== true) throw new Error(`pull failed: ${JSON.stringify(end)}`);
  if (failure) throw new Error(`pull out of order: ${failure}`);
  if (received !== size || hash.digest("hex") !== sha256)
    throw new Error(`pull returned ${received} bytes with another sha256`);
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Run {
  uploadMs: number;
  pullMs: number;
  upload: Extract<FromServer, { kind: "stats" }>;
  pull: Extract<FromServer, { kind: "stats" }>;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === "--server") return server(args[1]!);
  const quick = args.includes("--quick") || Boolean(process.env.BENCH_QUICK);
  const rounds = quick ? 1 : 5;

  const dir = await mkdtemp(path.join(tmpdir(), "cg-bench-media-"));
  const file = path.join(dir, "source.bin");
  const warmFile = path.join(dir, "warm.bin");
  const copies: number[] = [];
  const syncedCopies: number[] = [];
  const runs: Run[] = [];
  let child: ServerChild | undefined;
  let device: Device | undefined;
  try {
    const sha256 = await makeFile(file, FILE_BYTES);
    const warmSha256 = await makeFile(warmFile, WARM_BYTES);
    // Read once so every reader below starts from the page cache.
    for await (const _ of createReadStream(file)) void _;

    for (let round = 1; round <= rounds; round++) {
      copies.push(await copyFile(file, path.join(dir, "copy.bin"), false));
      syncedCopies.push(await copyFile(file, path.join(dir, "copy.bin"), true));

      // A fresh gateway per round: RSS that an earlier round left mapped would hide this round's growth.
      child = new ServerChild(path.join(dir, `media-${round}`));
      const ready = await child.next();
      if (ready.kind !== "ready") throw new Error("media server did not start");
      device = await Device.connect(ready.port);
      // Warm-up: the code paths are compiled before the measured upload.
      await upload(device, warmFile, WARM_BYTES, "warm-up", warmSha256);
      await pull(device, WARM_BYTES, "warm-up", warmSha256);

      const ref = `bench-${round}`;
      await child.request({ kind: "measure-start" });
      const uploadMs = await upload(device, file, FILE_BYTES, ref, sha256);
      const up = await child.request({ kind: "measure-stop" });

      await child.request({ kind: "measure-start" });
      const pullMs = await pull(device, FILE_BYTES, ref, sha256);
      const down = await child.request({ kind: "measure-stop" });
      if (up.kind !== "stats" || down.kind !== "stats") throw new Error("media server sent no stats");
      runs.push({ uploadMs, pullMs, upload: up, pull: down });
      console.error(
        `media: round ${round}/${rounds}: copy ${copies.at(-1)!.toFixed(0)} ms (with fsync ${syncedCopies.at(-1)!.toFixed(0)} ms), ` +
          `upload ${uploadMs.toFixed(0)} ms (RSS +${((up.peakRss - up.baselineRss) / MiB).toFixed(1)} MiB), pull ${pullMs.toFixed(0)} ms`,
      );
      device.ws.terminate();
      device = undefined;
      await child.stop();
      child = undefined;
    }
  } finally {
    device?.ws.terminate();
    await child?.stop();
    await rm(dir, { recursive: true, force: true });
  }

  const mbps = (ms: number) => (FILE_BYTES / 1e6 / (ms / 1000)).toFixed(0);
  const copyMs = median(copies);
  const uploadMs = median(runs.map((r) => r.uploadMs));
  const pullMs = median(runs.map((r) => r.pullMs));
  const growth = runs.map((r) => (r.upload.peakRss - r.upload.baselineRss) / MiB);
  const pullGrowth = runs.map((r) => (r.pull.peakRss - r.pull.baselineRss) / MiB);
  const worstGrowth = Math.max(...growth);
  console.log(
    `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), a ${FILE_BYTES / MiB} MiB file of random bytes in ${tmpdir()}, ${rounds} round(s); median (best). ws masking in both processes: ${masking()}.\n`,
  );
  console.log(
    "| operation | time | throughput | vs plain copy | server RSS baseline → peak (growth) | Buffer memory growth, peak | received, not yet written, peak | server loop delay p99 / max | server CPU |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  const range = (xs: number[]) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)})`;
  console.log(`| copy, node:fs streams | ${range(copies)} | ${mbps(copyMs)} MB/s | 1.00× | – | – | – | – | – |`);
  console.log(
    `| copy, node:fs streams + fsync | ${range(syncedCopies)} | ${mbps(median(syncedCopies))} MB/s | ${(median(syncedCopies) / copyMs).toFixed(2)}× | – | – | – | – | – |`,
  );
  const rss = (r: Run["upload"]) =>
    `${(r.baselineRss / MiB).toFixed(0)} → ${(r.peakRss / MiB).toFixed(0)} MiB (+${((r.peakRss - r.baselineRss) / MiB).toFixed(1)}) | ` +
    `+${(r.peakArrayBuffersGrowth / MiB).toFixed(1)} MiB`;
  runs.forEach((r, i) => {
    console.log(
      `| upload, round ${i + 1} | ${r.uploadMs.toFixed(0)} ms | ${mbps(r.uploadMs)} MB/s | ${(r.uploadMs / copyMs).toFixed(2)}× | ${rss(r.upload)} | ${(r.upload.peakQueuedBytes / MiB).toFixed(1)} MiB | ${r.upload.loopP99Ms.toFixed(1)} / ${r.upload.loopMaxMs.toFixed(1)} ms | ${r.upload.cpuMs.toFixed(0)} ms |`,
    );
    console.log(
      `| pull, round ${i + 1} | ${r.pullMs.toFixed(0)} ms | ${mbps(r.pullMs)} MB/s | ${(r.pullMs / copyMs).toFixed(2)}× | ${rss(r.pull)} | – | ${r.pull.loopP99Ms.toFixed(1)} / ${r.pull.loopMaxMs.toFixed(1)} ms | ${r.pull.cpuMs.toFixed(0)} ms |`,
    );
  });
  console.log(
    `\nTargets: upload within 2× the copy time: ${uploadMs <= 2 * copyMs ? "met" : "NOT met"} (${(uploadMs / copyMs).toFixed(2)}×, median); ` +
      `pull within 2×: ${pullMs <= 2 * copyMs ? "met" : "NOT met"} (${(pullMs / copyMs).toFixed(2)}×); ` +
      `RSS growth during upload under 32 MiB: ${worstGrowth < 32 ? "met" : "NOT met"} (worst +${worstGrowth.toFixed(1)} MiB; during pull worst +${Math.max(...pullGrowth).toFixed(1)} MiB).`,
  );
  console.log(`\n${JSON.stringify({ fileBytes: FILE_BYTES, copies, syncedCopies, runs }, null, 1)}`);
}

await main();
