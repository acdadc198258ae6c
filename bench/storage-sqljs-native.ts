/**
 * The native ceiling for bench/storage-sqljs.ts: the same schema, writes (`applyOp`) and search on
 * better-sqlite3, WAL with synchronous=FULL so each commit is fsynced. Loaded from
 * BETTER_SQLITE3_DIR (a folder whose node_modules holds it), since it is no dependency of this
 * project. Run in a child process by bench/storage-sqljs.ts (`--native-size N`).
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyOp } from "../adapters/storage/sqljs/apply.js";
import { MIGRATIONS } from "../adapters/storage/sqljs/schema.js";
import { search } from "../adapters/storage/sqljs/search.js";
import type { Sql } from "../adapters/storage/sqljs/sql.js";
import type { StoredMessage } from "chat-gateway";
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
  RARE,
  sizeTable,
  timed,
} from "./corpus.js";

/** The storage's `Sql` over a better-sqlite3 database, its statements prepared once. */
function shim(d: any): Sql {
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
}

/** One commit of `messages` and an outbox frame, in one transaction, as the storage writes it. */
function commit(sql: Sql, messages: StoredMessage[], payload: Record<string, unknown>): void {
  sql.transaction(() =>
    applyOp(sql, { k: "commit", o: OWNER, c: { messages, outbox: [{ type: "message", payload }] }, t: Date.now() }),
  );
}

/** History pages as the storage reads them: the newest, or the page before a message. */
function historyOf(sql: Sql) {
  return (chat: string, before?: string) => {
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
}

/** Reads on a filled database: history pages and searches. */
async function reads(sql: Sql, total: number, result: Record<string, unknown>): Promise<void> {
  const depth = Math.min(60, Math.floor(total / CHATS / 2));
  const history = historyOf(sql);
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
}

/** One size, in this process: fill, measure, report JSON on stdout. */
export async function runNative(total: number): Promise<void> {
  const require = createRequire(join(process.env.BETTER_SQLITE3_DIR!, "index.js"));
  const Database = require("better-sqlite3") as new (file: string) => any;
  const dir = await mkdtemp(join(tmpdir(), "cg-bench-native-"));
  const file = join(dir, "db.sqlite");
  const result: Record<string, unknown> = { messages: total, engine: "better-sqlite3" };
  try {
    let db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    let sql = shim(db);
    for (const step of MIGRATIONS) {
      if (typeof step === "string") db.exec(step);
      else step(sql);
    }
    const fillStart = performance.now();
    for (let i = 0; i < total; i += 1000) {
      commit(
        sql,
        Array.from({ length: Math.min(1000, total - i) }, (_, k) => message(i + k, total)),
        { upto: i },
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
    const writes = 2000;
    t = performance.now();
    result.writeSequential = await timed(writes, async () => {
      const i = next++;
      commit(sql, [message(i, total)], { message_id: id(i) });
    });
    result.writesPerSecSequential = Math.round(writes / ((performance.now() - t) / 1000));
    await reads(sql, total, result);
    db.close();
    result.dbFiles = await filesOnDisk(dir);
    result.peakRssMB = mb(process.resourceUsage().maxRSS * 1024);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

export function nativeTable(rows: Array<Record<string, any>>): string {
  return sizeTable(rows, [
    ["fill (transactions of 1,000), messages/s", (r) => String(r.fillMessagesPerSec)],
    ["write, one at a time: p50 / p99 ms", p50p99("writeSequential")],
    ["writes/s, one at a time", (r) => String(r.writesPerSecSequential)],
    ["history newest page (50): p50 / p99 ms", p50p99("historyNewest")],
    ["history deep `before` page (50): p50 / p99 ms", p50p99("historyDeep")],
    ["search rare word: p50 / p99 ms", p50p99("searchRare")],
    ["search common word, all: p50 / p99 ms", p50p99("searchCommon")],
    ["search common word, one chat: p50 / p99 ms", p50p99("searchCommonInChat")],
    ["open, ms", (r) => String(r.startupSnapshotOnlyMs)],
    ["peak RSS, MB", (r) => String(r.peakRssMB)],
    ["files", (r) => filesCell(r.dbFiles)],
  ]);
}
