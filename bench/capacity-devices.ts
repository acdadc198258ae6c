/**
 * The device child of bench/capacity.ts: opens N connections (at most 256 opening at once), says
 * `hello` on each (then `sync` on the gateway, in the storm), and in the storm reconnects every
 * one with jitter and backoff once the restarted server listens.
 * @module
 */
import { WebSocket } from "ws";
import { deviceToken, type Side } from "./capacity-server.js";

export type DeviceCommand =
  | { kind: "connect"; url: string; count: number; side: Side }
  | { kind: "storm" }
  | { kind: "listening" }
  | { kind: "close" }
  | { kind: "exit" };
export interface DeviceReport {
  /** connect: ms from the first open to the last hello.ok. */
  ms: number;
  /** storm: Date.now() when the last device was back. */
  doneAt: number;
  /** storm: reconnect attempts that failed and were tried again. */
  retries: number;
}

const OPENING_AT_ONCE = 256;
/** Reconnecting devices spread themselves over this window after the server is back. */
const JITTER_MS = 1000;
const BACKOFF_MS = 250;
const BACKOFF_MAX_MS = 4000;

let url = "";
let side: Side = "bare";
let sockets: WebSocket[] = [];
let cursors: number[] = [];

/** Opens device `i` and resolves when it is back: hello.ok (and sync.done with `sync`); rejects on close. */
function open(i: number, sync: boolean): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once("error", reject);
    ws.once("close", (code) => reject(new Error(`closed ${code}`)));
    ws.once("open", () => ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: deviceToken(i), device_id: `d${i}`, device_name: "bench" } })));
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string; seq?: number; payload?: { cursor?: number } };
      if (typeof frame.seq === "number") cursors[i] = Math.max(cursors[i] ?? 0, frame.seq);
      if (frame.type === "hello.ok") {
        if (!sync) return resolve(ws);
        ws.send(JSON.stringify({ type: "sync", id: "s", payload: { cursor: cursors[i] ?? 0 } }));
      } else if (frame.type === "sync.done") {
        cursors[i] = frame.payload?.cursor ?? cursors[i];
        resolve(ws);
      }
    });
  });
}

async function connectAll(count: number): Promise<number> {
  sockets = new Array(count);
  cursors = new Array(count).fill(0);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      sockets[i] = await open(i, false);
    }
  };
  await Promise.all(Array.from({ length: OPENING_AT_ONCE }, worker));
  return performance.now() - started;
}

/** Every device waits a random time in [0, JITTER_MS), then reconnects with backoff until it is back. */
async function storm(listening: Promise<void>): Promise<DeviceReport> {
  await listening;
  let retries = 0;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const back = async (i: number) => {
    await sleep(Math.random() * JITTER_MS);
    for (let attempt = 0; ; attempt++) {
      try {
        sockets[i] = await open(i, side === "gateway");
        return;
      } catch {
        retries++;
        await sleep(Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** attempt));
      }
    }
  };
  await Promise.all(sockets.map((_, i) => back(i)));
  return { ms: 0, doneAt: Date.now(), retries };
}

/** Runs the device child: answers each command of the parent with one DeviceReport. */
export async function runDevices(): Promise<void> {
  let listened: () => void = () => {};
  process.on("message", async (m: DeviceCommand) => {
    const reply = (r: Partial<DeviceReport>) => process.send!({ ms: 0, doneAt: 0, retries: 0, ...r });
    if (m.kind === "connect") {
      url = m.url;
      side = m.side;
      reply({ ms: await connectAll(m.count) });
    } else if (m.kind === "storm") {
      reply(await storm(new Promise<void>((r) => (listened = r))));
    } else if (m.kind === "listening") {
      listened();
    } else if (m.kind === "close") {
      for (const ws of sockets) ws?.terminate();
      sockets = [];
      reply({});
    } else if (m.kind === "exit") {
      process.exit(0);
    }
  });
  process.on("disconnect", () => process.exit(0));
}
