/**
 * Benchmark of the sql.js storage (issue #4): acknowledged write latency and throughput, history
 * pages, search, start-up (snapshot plus journal), peak RSS and files on disk, at several sizes.
 *
 *   node --import tsx bench/storage-sqljs.ts              # 10,000 and 100,000 messages
 *   node --import tsx bench/storage-sqljs.ts --quick      # 2,000 messages
 *   node --import tsx bench/storage-sqljs.ts --sizes=10000,1000000
 *   BETTER_SQLITE3_DIR=/path/with/node_modules node --import tsx bench/storage-sqljs.ts   # plus the native ceiling
 *
 * Each size runs in its own child process, so peak RSS belongs to that size alone. Prints a
 * Markdown table and the raw JSON.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import type { SqlJsStorage } from "chat-gateway/storage/sqljs";
import {
  CHATS,
  COMMON,
  filesCell,
  filesOnDisk,
  id,
  mb,
  message,
  OWNER,
  p50p99,
  percentiles,
  RARE,
  sizeTable,
  timed,
} from "./corpus.js";
import { nativeTable, runNative } from "./storage-sqljs-native.js";

const self = fileURLToPath(import.meta.url);

const BATCH = 1000;
const WRITES = 2000;
const CONCURRENT = 32;
const PER_WRITER = 100;
const JOURNAL_WRITES = 5000;

const open = async (dir: string) => {
  const storage = sqlJsStorage({ dir, onWarning: (m) => console.error(m) });
  await storage.open();
  return storage;
};

/** Fills a new storage with `total` messages in batched commits and closes it (a snapshot); messages per second. */
async function fill(dir: string, total: number): Promise<number> {
  const storage = await open(dir);
  const fillStart = performance.now();
  for (let i = 0; i < total; i += BATCH) {
    const messages = Array.from({ length: Math.min(BATCH, total - i) }, (_, k) => message(i + k, total));
    await storage.commit(OWNER, { messages, outbox: [{ type: "message", payload: { upto: i } }] });
  }
  const perSecond = Math.round(total / ((performance.now() - fillStart) / 1000));
  await storage.close();
  return perSecond;
}

/** Acknowledged writes one at a time, then 32 writers at once; the index of the next message. */
async function writes(storage: SqlJsStorage, total: number, result: Record<string, unknown>): Promise<number> {
  let next = total;
  const one = () => {
    const i = next++;
    return storage.commit(OWNER, {
      messages: [message(i, total)],
      outbox: [{ type: "message", payload: { message_id: id(i) } }],
    });
  };
  let t = performance.now();
  result.writeSequential = await timed(WRITES, one);
  result.writesPerSecSequential = Math.round(WRITES / ((performance.now() - t) / 1000));
  // Concurrent writers share fsyncs through group commit.
  const latencies: number[] = [];
  t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      for (let k = 0; k < PER_WRITER; k++) {
        const s = performance.now();
        await one();
        latencies.push(performance.now() - s);
      }
    }),
  );
  result.writesPerSecConcurrent32 = Math.round((CONCURRENT * PER_WRITER) / ((performance.now() - t) / 1000));
  result.writeConcurrent32 = percentiles(latencies);
  return next;
}

/** History pages and searches. */
async function reads(storage: SqlJsStorage, total: number, result: Record<string, unknown>): Promise<void> {
  result.historyNewest = await timed(500, (k) =>
    storage.history(OWNER, { chat_id: `chat${k % CHATS}`, thread_id: null, limit: 50 }),
  );
  // A page near the very start of a chat: the before message is the chat's 60th oldest (or its middle).
  const depth = Math.min(60, Math.floor(total / CHATS / 2));
  result.historyDeep = await timed(500, async (k) => {
    const c = k % CHATS;
    const page = await storage.history(OWNER, {
      chat_id: `chat${c}`,
      thread_id: null,
      limit: 50,
      before: id(c + CHATS * depth),
    });
    if (!page) throw new Error("deep page not found");
  });
  const rareHits = (await storage.search(OWNER, { query: RARE, scope: "all", limit: 20 })).length;
  const commonHits = (await storage.search(OWNER, { query: COMMON, scope: "all", limit: 20 })).length;
  result.searchRare = {
    ...(await timed(200, () => storage.search(OWNER, { query: RARE, scope: "all", limit: 20 }))),
    hits: rareHits,
  };
  result.searchCommon = {
    ...(await timed(50, () => storage.search(OWNER, { query: COMMON, scope: "all", limit: 20 }))),
    hits: commonHits,
    matching: Math.ceil(total / 5),
  };
  result.searchCommonInChat = await timed(50, (k) =>
    storage.search(OWNER, { query: COMMON, scope: "chat", chat_id: `chat${k % CHATS}`, limit: 20 }),
  );
}

/** A child writes 5,000 acknowledged messages from `next` on and is killed, leaving a journal to replay. */
async function crashWriter(dir: string, next: number, total: number): Promise<void> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", self, "--child-write", dir, String(next), String(JOURNAL_WRITES), String(total)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      if (out.includes("done")) {
        child.kill("SIGKILL");
        resolve();
      }
    });
    child.on("exit", () => (out.includes("done") ? resolve() : reject(new Error("writer died early"))));
  });
  await new Promise((r) => child.on("exit", r));
}

/** One size, in this process: fill, measure, report JSON on stdout. */
async function runSize(total: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cg-bench-sqljs-"));
  const result: Record<string, unknown> = { messages: total };
  try {
    result.fillMessagesPerSec = await fill(dir, total);
    // Start measuring from a settled state: close snapshotted the filled database.
    let t = performance.now();
    let storage = await open(dir);
    result.startupSnapshotOnlyMs = Math.round(performance.now() - t);
    result.snapshotMB = mb(Object.entries(await filesOnDisk(dir)).find(([f]) => f.startsWith("snapshot-"))?.[1] ?? 0);
    const next = await writes(storage, total, result);
    await reads(storage, total, result);

    // Start-up with a journal to replay.
    await storage.close();
    await crashWriter(dir, next, total);
    result.filesAfterCrash = await filesOnDisk(dir);
    t = performance.now();
    storage = await open(dir);
    result.startupSnapshotPlusJournalMs = Math.round(performance.now() - t);
    result.journalRecordsReplayed = JOURNAL_WRITES;
    const bounds = await storage.outboxBounds(OWNER);
    if (bounds.last !== Math.ceil(total / BATCH) + WRITES + CONCURRENT * PER_WRITER + JOURNAL_WRITES)
      throw new Error(`lost writes: ${JSON.stringify(bounds)}`);
    t = performance.now();
    await storage.close();
    result.closeWithSnapshotMs = Math.round(performance.now() - t);
    result.filesAfterClose = await filesOnDisk(dir);
    result.peakRssMB = mb(process.resourceUsage().maxRSS * 1024);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** The crash-start helper: append acknowledged writes, print "done", wait to be killed. */
async function childWrite(dir: string, from: number, count: number, total: number): Promise<void> {
  // A snapshot threshold above the journal written here, so the start-up has it all to replay.
  const storage = sqlJsStorage({ dir, snapshotMinBytes: 1024 * 1024 * 1024 });
  await storage.open();
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = from + w; i < from + count; i += 16) {
        await storage.commit(OWNER, {
          messages: [message(i, total)],
          outbox: [{ type: "message", payload: { message_id: id(i) } }],
        });
      }
    }),
  );
  process.stdout.write("done\n");
  setInterval(() => {}, 1000);
}

function table(rows: Array<Record<string, any>>): string {
  return sizeTable(rows, [
    ["fill (batched commits of 1,000), messages/s", (r) => String(r.fillMessagesPerSec)],
    ["write, one at a time: p50 / p99 ms", p50p99("writeSequential")],
    ["writes/s, one at a time", (r) => String(r.writesPerSecSequential)],
    ["write, 32 concurrent: p50 / p99 ms", p50p99("writeConcurrent32")],
    ["writes/s, 32 concurrent (group commit)", (r) => String(r.writesPerSecConcurrent32)],
    ["history newest page (50): p50 / p99 ms", p50p99("historyNewest")],
    ["history deep `before` page (50): p50 / p99 ms", p50p99("historyDeep")],
    ["search rare word (10 matches): p50 / p99 ms", p50p99("searchRare")],
    ["search common word (1 in 5 messages), all: p50 / p99 ms", p50p99("searchCommon")],
    ["search common word, one chat: p50 / p99 ms", p50p99("searchCommonInChat")],
    ["start-up, snapshot only, ms", (r) => String(r.startupSnapshotOnlyMs)],
    ["start-up, snapshot + 5,000-record journal, ms", (r) => String(r.startupSnapshotPlusJournalMs)],
    ["close (final snapshot), ms", (r) => String(r.closeWithSnapshotMs)],
    ["snapshot size, MB", (r) => String(r.snapshotMB)],
    ["peak RSS, MB", (r) => String(r.peakRssMB)],
    ["files after a crash", (r) => filesCell(r.filesAfterCrash)],
  ]);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === "--child-write") return childWrite(args[1], Number(args[2]), Number(args[3]), Number(args[4]));
  if (args[0] === "--size") return runSize(Number(args[1]));
  if (args[0] === "--native-size") return runNative(Number(args[1]));
  const sizesArg = args.find((a) => a.startsWith("--sizes="));
  const sizes = sizesArg
    ? sizesArg.slice(8).split(",").map(Number)
    : args.includes("--quick") || process.env.BENCH_QUICK
      ? [2000]
      : [10_000, 100_000];
  const run = async (mode: string, size: number) => {
    console.error(`storage bench: ${mode} ${size} messages…`);
    const child = spawn(process.execPath, ["--max-old-space-size=4096", "--import", "tsx", self, mode, String(size)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    const code = await new Promise<number | null>((r) => child.on("exit", r));
    if (code !== 0) throw new Error(`${mode} ${size} failed with exit code ${code}`);
    return JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, any>;
  };
  const rows: Array<Record<string, any>> = [];
  for (const size of sizes) rows.push(await run("--size", size));
  console.log(`Node ${process.version}, ${(await import("node:os")).cpus().length} cores, sql.js 1.16.0\n`);
  console.log(table(rows));
  if (process.env.BETTER_SQLITE3_DIR) {
    const native: Array<Record<string, any>> = [];
    for (const size of sizes) native.push(await run("--native-size", size));
    console.log(`\nbetter-sqlite3 (WAL, synchronous=FULL), same schema, writes and search code:\n`);
    console.log(nativeTable(native));
    rows.push(...native);
  }
  console.log(`\n${JSON.stringify(rows, null, 1)}`);
}

await main();
