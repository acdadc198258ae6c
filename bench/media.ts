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
 * The gateway child is bench/media-server.ts, the device bench/media-device.ts.
 * Prints a Markdown table and the raw JSON. Figures go to bench/NOTES.md, and the newest to bench/RESULTS.md.
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, open, rm, unlink } from "node:fs/promises";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { Device, pull, upload } from "./media-device.js";
import { FILE_BYTES, MiB, type FromServer, type ServerStats, type ToServer } from "./media-wire.js";
import { ServerChild } from "./server-child.js";

/** The warm-up file uploaded and pulled before each measured round. */
const WARM_BYTES = 2 * MiB;
const serverFile = fileURLToPath(new URL("./media-server.ts", import.meta.url));

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

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Run {
  uploadMs: number;
  pullMs: number;
  upload: ServerStats;
  pull: ServerStats;
}

interface Measured {
  rounds: number;
  copies: number[];
  syncedCopies: number[];
  runs: Run[];
}

type Child = ServerChild<ToServer, FromServer>;

/** Asks the gateway child for its stats around `work`; what `work` resolved with, and the stats. */
async function measured<T>(child: Child, work: () => Promise<T>): Promise<[T, ServerStats]> {
  await child.request({ kind: "measure-start" });
  const result = await work();
  const stats = await child.request({ kind: "measure-stop" });
  if (stats.kind !== "stats") throw new Error("media server sent no stats");
  return [result, stats];
}

/** One round on a fresh gateway: a warm-up upload and pull, then the measured ones. */
async function round(
  dir: string,
  n: number,
  files: { file: string; sha256: string; warm: string; warmSha256: string },
): Promise<Run> {
  // A fresh gateway per round: RSS that an earlier round left mapped would hide this round's growth.
  // --expose-gc: the baseline is taken right after a full GC, so garbage from earlier runs does not hide growth.
  const args = [path.join(dir, `media-${n}`), ...process.argv.filter((a) => a.startsWith("--mib="))];
  const child: Child = new ServerChild(serverFile, args, "media server", ["--expose-gc"]);
  let device: Device | undefined;
  try {
    device = await Device.connect(await child.ready);
    const on = device;
    // Warm-up: the code paths are compiled before the measured upload.
    await upload(on, files.warm, WARM_BYTES, "warm-up", files.warmSha256);
    await pull(on, WARM_BYTES, "warm-up", files.warmSha256);
    const ref = `bench-${n}`;
    const [uploadMs, up] = await measured(child, () => upload(on, files.file, FILE_BYTES, ref, files.sha256));
    const [pullMs, down] = await measured(child, () => pull(on, FILE_BYTES, ref, files.sha256));
    return { uploadMs, pullMs, upload: up, pull: down };
  } finally {
    device?.ws.terminate();
    await child.stop();
  }
}

async function measure(rounds: number): Promise<Measured> {
  const dir = await mkdtemp(path.join(tmpdir(), "cg-bench-media-"));
  const file = path.join(dir, "source.bin");
  const warm = path.join(dir, "warm.bin");
  const out: Measured = { rounds, copies: [], syncedCopies: [], runs: [] };
  try {
    const files = {
      file,
      warm,
      sha256: await makeFile(file, FILE_BYTES),
      warmSha256: await makeFile(warm, WARM_BYTES),
    };
    // Read once so every reader below starts from the page cache.
    for await (const _ of createReadStream(file)) void _;
    for (let n = 1; n <= rounds; n++) {
      out.copies.push(await copyFile(file, path.join(dir, "copy.bin"), false));
      out.syncedCopies.push(await copyFile(file, path.join(dir, "copy.bin"), true));
      const run = await round(dir, n, files);
      out.runs.push(run);
      console.error(
        `media: round ${n}/${rounds}: copy ${out.copies.at(-1)!.toFixed(0)} ms (with fsync ${out.syncedCopies.at(-1)!.toFixed(0)} ms), ` +
          `upload ${run.uploadMs.toFixed(0)} ms (RSS +${((run.upload.peakRss - run.upload.baselineRss) / MiB).toFixed(1)} MiB), pull ${run.pullMs.toFixed(0)} ms`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

/** The Markdown table, the targets and the raw JSON. */
function report({ rounds, copies, syncedCopies, runs }: Measured): void {
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

const quick = process.argv.includes("--quick") || Boolean(process.env.BENCH_QUICK);
report(await measure(quick ? 1 : 5));
