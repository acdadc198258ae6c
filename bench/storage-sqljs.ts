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
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { applyOp } from "../adapters/storage/sqljs/apply.js";
import { MIGRATIONS } from "../adapters/storage/sqljs/schema.js";
import { search } from "../adapters/storage/sqljs/search.js";
import type { Sql } from "../adapters/storage/sqljs/sql.js";
import { CHATS, COMMON, id, message, OWNER, percentiles, RARE, timed } from "./corpus.js";

const self = fileURLToPath(import.meta.url);

async function filesOnDisk(dir: string) {
  const out: Record<string, number> = {};
  for (const f of (await readdir(dir)).sort()) out[f] = (await stat(join(dir, f))).size;
  return out;
}

const mb = (bytes: number) => +(bytes / 1024 / 1024).toFixed(1);

/** One size, in this process: fill, measure, report JSON on stdout. */
async function runSize(total: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cg-bench-sqljs-"));
  const result: Record<string, unknown> = { messages: total };
  try {
    let storage = sqlJsStorage({ dir, onWarning: (m) => console.error(m) });
    await storage.open();
    const fillStart = performance.now();
    const batch = 1000;
    for (let i = 0; i < total; i += batch) {
      const messages = Array.from({ length: Math.min(batch, total - i) }, (_, k) => message(i + k, total));
      await storage.commit(OWNER, { messages, outbox: [{ type: "message", payload: { upto: i } }] });
    }
    result.fillMessagesPerSec = Math.round(total / ((performance.now() - fillStart) / 1000));
    // Start measuring from a settled state: close snapshots the filled database.
    await storage.close();
    storage = sqlJsStorage({ dir, onWarning: (m) => console.error(m) });
    let t = performance.now();
    await storage.open();
    result.startupSnapshotOnlyMs = Math.round(performance.now() - t);
    result.snapshotMB = mb(Object.entries(await filesOnDisk(dir)).find(([f]) => f.startsWith("snapshot-"))?.[1] ?? 0);

    let next = total;
    const one = () => {
      const i = next++;
      return storage.commit(OWNER, {
        messages: [message(i, total)],
        outbox: [{ type: "message", payload: { message_id: id(i) } }],
      });
    };
    const writes = 2000;
    t = performance.now();
    result.writeSequential = await timed(writes, one);
    result.writesPerSecSequential = Math.round(writes / ((performance.now() - t) / 1000));
    // Concurrent writers share fsyncs through group commit.
    const concurrent = 32;
    const perWriter = 100;
    const latencies: number[] = [];
    t = performance.now();
    await Promise.all(
      Array.from({ length: concurrent }, async () => {
        for (let k = 0; k < perWriter; k++) {
          const s = performance.now();
          await one();
          latencies.push(performance.now() - s);
        }
      }),
    );
    result.writesPerSecConcurrent32 = Math.round((concurrent * perWriter) / ((performance.now() - t) / 1000));
    result.writeConcurrent32 = percentiles(latencies);

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

    // Start-up with a journal to replay: a child writes 5,000 acknowledged messages and is killed.
    await storage.close();
    const journalWrites = 5000;
    const child = spawn(
      process.execPath,
      ["--import", "tsx", self, "--child-write", dir, String(next), String(journalWrites), String(total)],
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
    result.filesAfterCrash = await filesOnDisk(dir);
    storage = sqlJsStorage({ dir, onWarning: (m) => console.error(m) });
    t = performance.now();
    await storage.open();
    result.startupSnapshotPlusJournalMs = Math.round(performance.now() - t);
    result.journalRecordsReplayed = journalWrites;
    const bounds = await storage.outboxBounds(OWNER);
    if (bounds.last !== Math.ceil(total / batch) + writes + concurrent * perWriter + journalWrites)
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

/**
 * The same schema, writes (`applyOp`) and search on better-sqlite3, WAL with synchronous=FULL so
 * each commit is fsynced: the native ceiling. Loaded from BETTER_SQLITE3_DIR (a folder whose
 * node_modules holds it), since it is no dependency of this project.
 */
async function runNative(total: number): Promise<void> {
  const require = createRequire(join(process.env.BETTER_SQLITE3_DIR!, "index.js"));
  const Database = require("better-sqlite3") as new (file: string) => any;
  const dir = await mkdtemp(join(tmpdir(), "cg-bench-native-"));
  const file = join(dir, "db.sqlite");
  const result: Record<string, unknown> = { messages: total, engine: "better-sqlite3" };
  try {
    let db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    const shim = (d: any): Sql => {
      const cache = new Map<string, any>();
      const stmt = (q: string) => cache.get(q) ?? cache.set(q, d.prepare(q)).get(q);
      // better-sqlite3 binds every number as REAL; FTS4 refuses a REAL docid.
      const ints = (p: unknown[]) => p.map((v) => (typeof v === "number" && Number.isSafeInteger(v) ? BigInt(v) : v));
      return {
        run: (q: string, p: unknown[] = []) => void stmt(q).run(...ints(p)),
        get: (q: string, p: unknown[] = []) =>
          stmt(q)
            .raw()
            .get(...ints(p)),
        all: (q: string, p: unknown[] = []) =>
          stmt(q)
            .raw()
            .all(...ints(p)),
        transaction: <T>(fn: () => T): T => d.transaction(fn)(),
      } as unknown as Sql;
    };
    let sql = shim(db);
    for (const step of MIGRATIONS) {
      if (typeof step === "string") db.exec(step);
      else step(sql);
    }
    const fillStart = performance.now();
    for (let i = 0; i < total; i += 1000) {
      const messages = Array.from({ length: Math.min(1000, total - i) }, (_, k) => message(i + k, total));
      sql.transaction(() =>
        applyOp(sql, {
          k: "commit",
          o: OWNER,
          c: { messages, outbox: [{ type: "message", payload: { upto: i } }] },
          t: Date.now(),
        }),
      );
    }
    result.fillMessagesPerSec = Math.round(total / ((performance.now() - fillStart) / 1000));
    db.close();
    let t = performance.now();
    db = new Database(file);
    db.pragma("synchronous = FULL");
    db.prepare("SELECT count(*) FROM messages").get();
    result.startupSnapshotOnlyMs = Math.round(performance.now() - t);
    sql = shim(db);
    let next = total;
    const one = async () => {
      const i = next++;
      sql.transaction(() =>
        applyOp(sql, {
          k: "commit",
          o: OWNER,
          c: { messages: [message(i, total)], outbox: [{ type: "message", payload: { message_id: id(i) } }] },
          t: Date.now(),
        }),
      );
    };
    const writes = 2000;
    t = performance.now();
    result.writeSequential = await timed(writes, one);
    result.writesPerSecSequential = Math.round(writes / ((performance.now() - t) / 1000));
    const depth = Math.min(60, Math.floor(total / CHATS / 2));
    const history = (chat: string, before?: string) => {
      if (!before)
        return sql.all(
          "SELECT text, data FROM messages WHERE owner = ? AND chat_id = ? AND thread_key = '' ORDER BY ts DESC, message_id DESC LIMIT 51",
          [OWNER, chat],
        );
      const at = sql.get("SELECT ts FROM messages WHERE owner = ? AND message_id = ?", [OWNER, before])!;
      return sql.all(
        "SELECT text, data FROM messages WHERE owner = ? AND chat_id = ? AND thread_key = '' AND (ts, message_id) < (?, ?) ORDER BY ts DESC, message_id DESC LIMIT 51",
        [OWNER, chat, at[0], before],
      );
    };
    result.historyNewest = await timed(500, async (k) =>
      history(`chat${k % CHATS}`).map((r) => JSON.parse(r[1] as string)),
    );
    result.historyDeep = await timed(500, async (k) =>
      history(`chat${k % CHATS}`, id((k % CHATS) + CHATS * depth)).map((r) => JSON.parse(r[1] as string)),
    );
    result.searchRare = await timed(200, async () => search(sql, OWNER, { query: RARE, scope: "all", limit: 20 }));
    result.searchCommon = await timed(50, async () => search(sql, OWNER, { query: COMMON, scope: "all", limit: 20 }));
    result.searchCommonInChat = await timed(50, async (k) =>
      search(sql, OWNER, { query: COMMON, scope: "chat", chat_id: `chat${k % CHATS}`, limit: 20 }),
    );
    db.close();
    result.dbFiles = await filesOnDisk(dir);
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
  const line = (label: string, f: (r: Record<string, any>) => string) => `| ${label} | ${rows.map(f).join(" | ")} |`;
  const p = (k: string) => (r: Record<string, any>) => `${r[k].p50} / ${r[k].p99}`;
  return [
    `| | ${rows.map((r) => `${r.messages.toLocaleString("en")} messages`).join(" | ")} |`,
    `|---|${rows.map(() => "---").join("|")}|`,
    line("fill (batched commits of 1,000), messages/s", (r) => String(r.fillMessagesPerSec)),
    line("write, one at a time: p50 / p99 ms", p("writeSequential")),
    line("writes/s, one at a time", (r) => String(r.writesPerSecSequential)),
    line("write, 32 concurrent: p50 / p99 ms", p("writeConcurrent32")),
    line("writes/s, 32 concurrent (group commit)", (r) => String(r.writesPerSecConcurrent32)),
    line("history newest page (50): p50 / p99 ms", p("historyNewest")),
    line("history deep `before` page (50): p50 / p99 ms", p("historyDeep")),
    line("search rare word (10 matches): p50 / p99 ms", p("searchRare")),
    line("search common word (1 in 5 messages), all: p50 / p99 ms", p("searchCommon")),
    line("search common word, one chat: p50 / p99 ms", p("searchCommonInChat")),
    line("start-up, snapshot only, ms", (r) => String(r.startupSnapshotOnlyMs)),
    line("start-up, snapshot + 5,000-record journal, ms", (r) => String(r.startupSnapshotPlusJournalMs)),
    line("close (final snapshot), ms", (r) => String(r.closeWithSnapshotMs)),
    line("snapshot size, MB", (r) => String(r.snapshotMB)),
    line("peak RSS, MB", (r) => String(r.peakRssMB)),
    line("files after a crash", (r) =>
      Object.entries(r.filesAfterCrash as Record<string, number>)
        .map(([f, s]) => `${f} ${mb(s)} MB`)
        .join(", "),
    ),
  ].join("\n");
}

function nativeTable(rows: Array<Record<string, any>>): string {
  const line = (label: string, f: (r: Record<string, any>) => string) => `| ${label} | ${rows.map(f).join(" | ")} |`;
  const p = (k: string) => (r: Record<string, any>) => `${r[k].p50} / ${r[k].p99}`;
  return [
    `| | ${rows.map((r) => `${r.messages.toLocaleString("en")} messages`).join(" | ")} |`,
    `|---|${rows.map(() => "---").join("|")}|`,
    line("fill (transactions of 1,000), messages/s", (r) => String(r.fillMessagesPerSec)),
    line("write, one at a time: p50 / p99 ms", p("writeSequential")),
    line("writes/s, one at a time", (r) => String(r.writesPerSecSequential)),
    line("history newest page (50): p50 / p99 ms", p("historyNewest")),
    line("history deep `before` page (50): p50 / p99 ms", p("historyDeep")),
    line("search rare word: p50 / p99 ms", p("searchRare")),
    line("search common word, all: p50 / p99 ms", p("searchCommon")),
    line("search common word, one chat: p50 / p99 ms", p("searchCommonInChat")),
    line("open, ms", (r) => String(r.startupSnapshotOnlyMs)),
    line("peak RSS, MB", (r) => String(r.peakRssMB)),
    line("files", (r) =>
      Object.entries(r.dbFiles as Record<string, number>)
        .map(([f, s]) => `${f} ${mb(s)} MB`)
        .join(", "),
    ),
  ].join("\n");
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
