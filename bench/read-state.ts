/**
 * What read state costs (docs/PROTOCOL.md §15), in one run:
 * 1. Storage on sql.js at 100,000 messages in 20 lanes (half of them answers), every lane read:
 *    the bytes of the watermark table and of the index of answers per lane, against the messages
 *    table with its own indexes (each measured as the pages a `DROP` and `VACUUM` frees), and the
 *    time of `unreadCounts` and of one `read` commit.
 * 2. A turn's push decision, through a real gateway and socket on sql.js: turns with a push
 *    target and `pushAfterMs: 0` (the decision runs: connected check, the lane's watermark, the
 *    wait, the watermark again) against turns without push; ms from `message.send` to
 *    `message.stop`, and from `message.stop` to the sender's call.
 *
 *   node --import tsx bench/read-state.ts            # 100,000 messages, 100 turns a side
 *   node --import tsx bench/read-state.ts --quick    # 20,000 messages, 50 turns a side
 *
 * Prints Markdown tables and the load average.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import initSqlJs from "sql.js";
import WebSocket from "ws";
import { createGateway, type PushSender, type StoredMessage } from "chat-gateway";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { attachWebSocket } from "chat-gateway/ws";
import { applyOp } from "../adapters/storage/sqljs/apply.js";
import { readMarkQueries } from "../adapters/storage/sqljs/read-marks.js";
import { migrate } from "../adapters/storage/sqljs/schema.js";
import { Sql, pragmaNumber } from "../adapters/storage/sqljs/sql.js";

const quick = process.argv.includes("--quick");
const MESSAGES = quick ? 20_000 : 100_000;
const TURNS = quick ? 50 : 100;
const LANES = 20;
const OWNER = "bench";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number) => n.toLocaleString("en-US");

/** A database of `MESSAGES` messages in 10 channels with a thread each, every lane read halfway. */
async function filledDatabase(): Promise<Sql> {
  const sql = new Sql(new (await initSqlJs()).Database());
  migrate(sql);
  const channels = Array.from({ length: LANES / 2 }, (_, i) => [
    {
      chat_id: `c${i}`,
      name: `c${i}`,
      kind: "channel" as const,
      parent_chat_id: null,
      is_default: false,
      archived: false,
    },
    {
      chat_id: `t${i}`,
      name: `t${i}`,
      kind: "thread" as const,
      parent_chat_id: `c${i}`,
      is_default: false,
      archived: false,
    },
  ]).flat();
  sql.transaction(() => applyOp(sql, { k: "commit", o: OWNER, t: 0, c: { channels } }));
  const lane = (n: number) => ({ chat_id: `c${(n % LANES) >> 1}`, thread_id: n % 2 ? `t${(n % LANES) >> 1}` : null });
  const message = (n: number): StoredMessage => ({
    message_id: `m${String(n).padStart(7, "0")}`,
    role: Math.floor(n / LANES) % 2 ? "assistant" : "user",
    text: `message ${n} lorem ipsum dolor sit amet`,
    reasoning: "",
    ts: 1_700_000_000_000 + n,
    media: [],
    ...lane(n),
    status: "complete",
  });
  for (let i = 0; i < MESSAGES; i += 1000) {
    const messages = Array.from({ length: Math.min(1000, MESSAGES - i) }, (_, k) => message(i + k));
    sql.transaction(() => applyOp(sql, { k: "commit", o: OWNER, t: 0, c: { messages } }));
  }
  // Each lane read up to its middle: every count walks to the cap.
  for (let n = MESSAGES / 2; n < MESSAGES / 2 + LANES; n++) {
    const m = message(n);
    sql.transaction(() =>
      applyOp(sql, {
        k: "commit",
        o: OWNER,
        t: 0,
        c: { read: { chat_id: m.chat_id, thread_id: m.thread_id, message_id: m.message_id, ts: m.ts } },
      }),
    );
  }
  return sql;
}

/** Bytes a statement frees, as pages after VACUUM; the database is changed (run last). */
function freedBytes(sql: Sql, statement: string): number {
  const size = () => pragmaNumber(sql.db, "page_count") * pragmaNumber(sql.db, "page_size");
  sql.db.exec("VACUUM");
  const before = size();
  sql.db.exec(statement);
  sql.db.exec("VACUUM");
  return before - size();
}

async function storageCost(): Promise<string[]> {
  const sql = await filledDatabase();
  const marks = sql.get("SELECT count(*) FROM read_marks")![0] as number;
  const countMs: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    readMarkQueries.unreadCounts(sql, OWNER, 999);
    countMs.push(performance.now() - started);
  }
  const countCpuMs = process.cpuUsage(cpu).user / 1000 / 20;
  const readMs: number[] = [];
  for (let i = 0; i < 200; i++) {
    const n = MESSAGES - 1 - 2 * LANES + i; // newer and newer marks of the last lanes
    const started = performance.now();
    sql.transaction(() =>
      applyOp(sql, {
        k: "commit",
        o: OWNER,
        t: 0,
        c: {
          read: {
            chat_id: "c0",
            thread_id: null,
            message_id: `r${String(i).padStart(4, "0")}`,
            ts: 1_800_000_000_000 + n,
          },
        },
      }),
    );
    readMs.push(performance.now() - started);
  }
  const lanes = readMarkQueries.unreadCounts(sql, OWNER, 999).length;
  const watermarks = freedBytes(sql, "DROP TABLE read_marks");
  const answersIndex = freedBytes(sql, "DROP INDEX messages_assistant");
  const messagesTable = freedBytes(sql, "DROP TABLE messages");
  return [
    `### Read state on sql.js at ${fmt(MESSAGES)} messages, ${LANES} lanes`,
    "",
    "| what | value | ÷ messages table |",
    "|---|---:|---:|",
    `| watermark rows | ${marks} (one per lane) | |`,
    `| watermark table | ${fmt(watermarks)} B | ${(watermarks / messagesTable).toFixed(5)} |`,
    `| index of answers per lane (migration 7) | ${fmt(answersIndex)} B | ${(answersIndex / messagesTable).toFixed(3)} |`,
    `| messages table with its other indexes | ${fmt(messagesTable)} B | 1 |`,
    `| unreadCounts, ${lanes} lanes each at the cap (median of 20, wall) | ${median(countMs).toFixed(2)} ms | |`,
    `| unreadCounts, the same (CPU time per call, mean) | ${countCpuMs.toFixed(2)} ms | |`,
    `| one read commit (median of 200) | ${median(readMs).toFixed(3)} ms | |`,
    "",
  ];
}

interface TurnTimes {
  turnMs: number[];
  decisionMs: number[];
}

/** A gateway on a fresh sql.js folder; with `push`, a device with a target and pushAfterMs 0. */
async function turns(push: boolean, count: number): Promise<TurnTimes> {
  const dir = await mkdtemp(path.join(tmpdir(), "cg-bench-read-"));
  let stoppedAt = 0;
  const decisionMs: number[] = [];
  const sender: PushSender = {
    name: "ntfy",
    accepts: () => true,
    send: async () => void decisionMs.push(performance.now() - stoppedAt),
  };
  const gateway = createGateway({
    storage: sqlJsStorage({ dir, inProcess: true }),
    runtime: demoRuntime({ delayMs: 0 }),
    logger: { info() {}, warn() {}, error() {} },
    ...(push ? { push: [sender], pushAfterMs: 0 } : {}),
  });
  await gateway.start();
  const server = http.createServer();
  const transport = attachWebSocket(gateway, { server, path: "/ws" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`);
  await new Promise((resolve) => ws.once("open", resolve));
  const next = (type: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const on = (data: WebSocket.RawData) => {
        const frame = JSON.parse(String(data));
        if (frame.type === type) {
          ws.off("message", on);
          resolve(frame.payload);
        }
      };
      ws.on("message", on);
    });
  const helloOk = next("hello.ok");
  ws.send(
    JSON.stringify({
      type: "hello",
      payload: {
        token: "",
        device_id: "phone",
        device_name: "phone",
        caps: { min_protocol: 1, media: false, push: push ? "ntfy" : "none", streaming: true },
        ntfy_topic: "t",
      },
    }),
  );
  await helloOk;
  const turnMs: number[] = [];
  for (let i = 0; i < count; i++) {
    const stop = next("message.stop");
    const started = performance.now();
    ws.send(JSON.stringify({ type: "message.send", id: `s${i}`, payload: { chat_id: "default", text: `turn ${i}` } }));
    await stop;
    stoppedAt = performance.now();
    turnMs.push(stoppedAt - started);
    if (push) while (decisionMs.length <= i) await new Promise((r) => setTimeout(r, 1));
  }
  ws.close();
  await gateway.close();
  await transport.close();
  server.close();
  await rm(dir, { recursive: true, force: true });
  return { turnMs, decisionMs };
}

async function pushDecision(): Promise<string[]> {
  // Alternating halves, so the machine's load weighs on both alike.
  const without: TurnTimes = { turnMs: [], decisionMs: [] };
  const withPush: TurnTimes = { turnMs: [], decisionMs: [] };
  for (let round = 0; round < 2; round++) {
    without.turnMs.push(...(await turns(false, TURNS / 2)).turnMs);
    const w = await turns(true, TURNS / 2);
    withPush.turnMs.push(...w.turnMs);
    withPush.decisionMs.push(...w.decisionMs);
  }
  const base = median(without.turnMs);
  return [
    `### A turn's push decision (sql.js, one device connected, ${TURNS} turns a side)`,
    "",
    "| | median ms | ÷ without push |",
    "|---|---:|---:|",
    `| turn, send → message.stop, without push | ${base.toFixed(2)} | 1 |`,
    `| turn, send → message.stop, with a push target (pushAfterMs 0) | ${median(withPush.turnMs).toFixed(2)} | ${(median(withPush.turnMs) / base).toFixed(2)} |`,
    `| push decision, message.stop → sender called | ${median(withPush.decisionMs).toFixed(2)} | ${(median(withPush.decisionMs) / base).toFixed(2)} |`,
    "",
  ];
}

console.error(`read-state bench: filling ${fmt(MESSAGES)} messages…`);
const cost = await storageCost();
console.error("read-state bench: turns…");
const lines = [...cost, ...(await pushDecision())];
console.log(lines.join("\n"));
console.log(
  `load average: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(", ")}`,
);
