/**
 * Time to the first token through a door (docs/PROTOCOL.md §19.3) against a WebSocket device on
 * the same server: what `/v1/chat/completions` costs over the device's own protocol.
 *
 *   node --import tsx bench/doors.ts            # 20 warm-up + 200 measured turns per side
 *   node --import tsx bench/doors.ts --quick    # 5 warm-up + 40 measured turns per side
 *
 * The gateway (memory storage, a runtime that yields its first token at once and the rest 30 ms
 * later) runs in a child process with its doors and WebSocket on one port. This process
 * alternates the sides turn by turn, one turn at a time, 120 ms apart, each side its own owner: a
 * WebSocket device (`caps.delta`) sends `message.send` into a new thread and times its first
 * `message.update` with text; the official `openai` client sends a streamed chat completion of one
 * user message (a new thread too) and times its first content delta. Each turn runs to its end
 * before the next starts. Prints a Markdown table and the raw JSON.
 * @module
 */
import { fork } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { WebSocket } from "ws";
import { createGateway, tokenAuthenticator, type AgentRuntime } from "chat-gateway";
import { createDoors } from "chat-gateway/doors";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";

const self = fileURLToPath(import.meta.url);
const quick = process.argv.includes("--quick");
const WARMUP = quick ? 5 : 20;
const TURNS = quick ? 40 : 200;
/** The WebSocket device's owner and the door's are two: neither sees the other's turns. */
const TOKEN = "bench-token";
const DOOR_TOKEN = "bench-door-token";
/** Quiet time after each turn, ms: past the 100 ms pace of a delta device's updates, so every first update goes out at once. */
const IDLE_MS = 120;

/**
 * The first token at once, the rest 30 ms later: the first token is what is timed, and it reaches
 * each side as an update of its own (an answer that ends at once would reach it whole, in the stop).
 */
function quickRuntime(): AgentRuntime {
  return {
    async *turn() {
      yield { type: "text", delta: "first" };
      await new Promise((resolve) => setTimeout(resolve, 30));
      yield { type: "text", delta: " and the rest of the answer." };
    },
  };
}

async function server(): Promise<void> {
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: quickRuntime(),
    authenticator: tokenAuthenticator({ [TOKEN]: "owner-ws", [DOOR_TOKEN]: "owner-door" }),
    logger: { info() {}, warn() {}, error() {} },
    maxConnectionsPerOwner: 10_000,
    maxConnectionsPerIp: 10_000,
    rateLimitPerAddress: { perSecond: 1e6, burst: 1e6 },
    rateLimitPerOwner: { perSecond: 1e6, burst: 1e6 },
  });
  await gateway.start();
  const doors = createDoors(gateway);
  const httpServer = http.createServer((req, res) => {
    void doors.handle(req, res).then((handled) => handled || res.writeHead(404).end());
  });
  attachWebSocket(gateway, { server: httpServer, path: "/ws/gateway" });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  process.send!({ port: (httpServer.address() as AddressInfo).port });
}

interface Frame {
  type: string;
  id?: string;
  payload: Record<string, unknown>;
}

/** A WebSocket device of the owner: every frame kept in order, and a wait for one that matches. */
async function device(port: number): Promise<{
  send(frame: unknown): void;
  /** How many frames came so far: a turn looks only at those after it. */
  readonly seen: number;
  find(match: (f: Frame) => boolean, from: number): Promise<Frame>;
}> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/gateway`);
  const frames: Frame[] = [];
  let wake: (() => void) | undefined;
  ws.on("message", (data: Buffer, isBinary) => {
    if (isBinary) return;
    frames.push(JSON.parse(String(data)) as Frame);
    wake?.();
  });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const api = {
    send: (frame: unknown) => ws.send(JSON.stringify(frame)),
    get seen() {
      return frames.length;
    },
    async find(match: (f: Frame) => boolean, from: number): Promise<Frame> {
      for (let at = from; ; ) {
        for (; at < frames.length; at++) if (match(frames[at]!)) return frames[at]!;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  api.send({
    type: "hello",
    id: "h",
    payload: { token: TOKEN, device_id: "bench-ws", caps: { min_protocol: 1, streaming: true, delta: true } },
  });
  const ok = await api.find((f) => f.type === "hello.ok" || f.type === "error", 0);
  if (ok.type !== "hello.ok") throw new Error("hello refused");
  return api;
}

/** An update with text, or the stop of an answer whose text came all at once. */
const hasText = (f: Frame) =>
  (f.type === "message.update" && (typeof f.payload.append === "string" ? f.payload.append : f.payload.text) !== "") ||
  (f.type === "message.stop" && f.payload.final_text !== "");

/** One WebSocket turn: ms from the send to the first text of its answer, then waits for the answer's stop. */
async function wsTurn(dev: Awaited<ReturnType<typeof device>>, chatId: string, n: number): Promise<number> {
  const from = dev.seen;
  const started = performance.now();
  dev.send({
    type: "message.send",
    id: `s${n}`,
    payload: { chat_id: chatId, thread_id: null, text: `ws ${n}`, auto_thread: true },
  });
  const echo = await dev.find((f) => f.id === `s${n}`, from);
  const start = await dev.find(
    (f) => f.type === "message.start" && f.payload.reply_to === echo.payload.message_id,
    from,
  );
  const answer = start.payload.message_id;
  await dev.find((f) => hasText(f) && f.payload.message_id === answer, from);
  const took = performance.now() - started;
  await dev.find((f) => f.type === "message.stop" && f.payload.message_id === answer, from);
  return took;
}

/** One door turn through the openai client: ms from the request to the first content delta. */
async function doorTurn(client: OpenAI, n: number): Promise<number> {
  const started = performance.now();
  const stream = await client.chat.completions.create({
    model: "default",
    stream: true,
    messages: [{ role: "user", content: `door ${n}` }],
  });
  let took: number | undefined;
  for await (const chunk of stream)
    if (took === undefined && chunk.choices[0]?.delta?.content) took = performance.now() - started;
  if (took === undefined) throw new Error("the door's answer had no text");
  return took;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function main(): Promise<void> {
  const child = fork(self, ["--server"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once("message", resolve as never));
  try {
    const dev = await device(port);
    dev.send({ type: "channel.list", id: "l", payload: {} });
    const channels = (await dev.find((f) => f.id === "l", 0)).payload.channels as Array<{
      chat_id: string;
      is_default: boolean;
    }>;
    const chatId = channels.find((c) => c.is_default)!.chat_id;
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: DOOR_TOKEN, maxRetries: 0 });
    const times = { ws: [] as number[], door: [] as number[] };
    for (let n = 0; n < WARMUP + TURNS; n++) {
      // Which side goes first alternates, so neither always meets a process just woken by the other.
      let ws: number;
      let door: number;
      const idle = () => new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      if (n % 2 === 0) {
        ws = await wsTurn(dev, chatId, n);
        await idle();
        door = await doorTurn(client, n);
      } else {
        door = await doorTurn(client, n);
        await idle();
        ws = await wsTurn(dev, chatId, n);
      }
      await idle();
      if (n < WARMUP) continue;
      times.ws.push(ws);
      times.door.push(door);
    }
    const row = (name: string, q: number) => {
      const ws = quantile(
        [...times.ws].sort((a, b) => a - b),
        q,
      );
      const door = quantile(
        [...times.door].sort((a, b) => a - b),
        q,
      );
      return `| first token ${name} | ${door.toFixed(2)} ms | ${ws.toFixed(2)} ms | ${(door / ws).toFixed(2)} (+${(door - ws).toFixed(2)} ms) | ${loadavg()[0]!.toFixed(1)} |`;
    };
    console.log(
      `${TURNS} turns a side, alternating; door = /v1/chat/completions (openai client, stream), baseline = WebSocket device\n`,
    );
    console.log("| figure | measured | baseline | ratio | load |\n| --- | --- | --- | --- | --- |");
    console.log([row("p50", 0.5), row("p90", 0.9), row("p99", 0.99)].join("\n"));
    console.log(`\n${JSON.stringify(times)}`);
  } finally {
    child.kill();
  }
  process.exit(0);
}

if (process.argv.includes("--server")) void server();
else void main();
