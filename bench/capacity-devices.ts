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
  /** connect: hellos and upgrades shed (1013, 503) and tried again after the hint; storm: reconnect attempts that failed and were tried again. */
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

/** A refused attempt; `retryAfterMs` is the gateway's hint, with close 1013 or an upgrade's 503 (docs/PROTOCOL.md §18.5). */
class Refused extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The wait a 1013 asks for, with jitter as the typed client adds it: [hint, 1.5 hint). */
const hinted = (ms: number) => ms * (1 + Math.random() / 2);

const HELLO_DELAY_MS = Number(process.env.BENCH_HELLO_DELAY_MS ?? 0);

/** Opens device `i` and resolves when it is back: hello.ok (and sync.done with `sync`); rejects on close. */
function open(i: number, sync: boolean): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    // An upgrade shed before it was taken: 503 with the hint in `Retry-After-Ms` (docs/PROTOCOL.md §18.5).
    ws.once("unexpected-response", (_request, response) => {
      const hint = response.headers["retry-after-ms"];
      response.resume();
      ws.terminate();
      reject(new Refused(`upgrade ${response.statusCode}`, typeof hint === "string" ? Number(hint) : undefined));
    });
    ws.once("error", reject);
    ws.once("close", (code, reason) => {
      const hint = code === 1013 ? /^retry_after_ms=(\d+)$/.exec(String(reason))?.[1] : undefined;
      reject(new Refused(`closed ${code}`, hint === undefined ? undefined : Number(hint)));
    });
    const hello = () =>
      ws.send(
        JSON.stringify({
          type: "hello",
          id: "h",
          payload: { token: deviceToken(i), device_id: `d${i}`, device_name: "bench" },
        }),
      );
    // BENCH_HELLO_DELAY_MS=n: each hello n ms after the upgrade, as over a network with that round trip.
    ws.once("open", () => (HELLO_DELAY_MS > 0 ? setTimeout(hello, HELLO_DELAY_MS) : hello()));
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

async function connectAll(count: number): Promise<{ ms: number; retries: number }> {
  sockets = new Array(count);
  cursors = new Array(count).fill(0);
  const started = performance.now();
  let next = 0;
  const refusals = { count: 0 };
  const worker = async () => {
    while (next < count) {
      const i = next++;
      sockets[i] = await openHonouringHints(i, false, refusals);
    }
  };
  await Promise.all(Array.from({ length: OPENING_AT_ONCE }, worker));
  return { ms: performance.now() - started, retries: refusals.count };
}

/** Opens device `i`, again after each 1013 as long as its hint says; any other failure throws. */
async function openHonouringHints(i: number, sync: boolean, refusals: { count: number }): Promise<WebSocket> {
  for (;;) {
    try {
      return await open(i, sync);
    } catch (error) {
      if (!(error instanceof Refused) || error.retryAfterMs === undefined) throw error;
      refusals.count++;
      await new Promise((r) => setTimeout(r, hinted(error.retryAfterMs!)));
    }
  }
}

/** Every device waits a random time in [0, JITTER_MS), then reconnects with backoff until it is back. */
async function storm(listening: Promise<void>): Promise<DeviceReport> {
  await listening;
  let retries = 0;
  const trace = process.env.BENCH_STORM_TRACE ? new StormTrace() : undefined;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const back = async (i: number) => {
    await sleep(Math.random() * JITTER_MS);
    for (let attempt = 0; ; attempt++) {
      try {
        sockets[i] = await open(i, side === "gateway");
        trace?.add("back");
        return;
      } catch (error) {
        retries++;
        // Shed with a hint (1013, or 503 before the upgrade): come back when it says; anything else: backoff with full jitter.
        const hint = error instanceof Refused ? error.retryAfterMs : undefined;
        trace?.add(hint === undefined ? `failed(${(error as Error).message})` : "shed", hint);
        await sleep(
          hint !== undefined ? hinted(hint) : Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** attempt),
        );
      }
    }
  };
  await Promise.all(sockets.map((_, i) => back(i)));
  trace?.print();
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
      reply(await connectAll(m.count));
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

/** BENCH_STORM_TRACE=1: what the storm's attempts ended in, per second after listening (stderr). */
class StormTrace {
  readonly #started = performance.now();
  readonly #seconds: Array<Map<string, number>> = [];
  readonly #hints: number[][] = [];

  add(what: string, hint?: number): void {
    const s = Math.floor((performance.now() - this.#started) / 1000);
    this.#seconds[s] ??= new Map();
    const counts = this.#seconds[s];
    counts.set(what, (counts.get(what) ?? 0) + 1);
    if (hint === undefined) return;
    this.#hints[s] ??= [];
    this.#hints[s].push(hint);
  }

  print(): void {
    for (let s = 0; s < this.#seconds.length; s++) {
      const hints = [...(this.#hints[s] ?? [])].sort((a, b) => a - b);
      const h = hints.length
        ? ` hints ${hints[0]}..${hints[Math.floor(hints.length / 2)]}..${hints[hints.length - 1]} ms`
        : "";
      console.error(
        `storm ${s} s: ${[...(this.#seconds[s] ?? new Map())].map(([k, v]) => `${k} ${v}`).join(", ")}${h}`,
      );
    }
  }
}
