/**
 * What open door streams cost the gateway (docs/PROTOCOL.md §19.3): memory per stream held
 * mid-answer, and CPU for 100 streams of one answer, each against WebSocket devices doing the same.
 *
 *   node --import tsx bench/door-load.ts            # 100 streams a side, 5 rounds
 *   node --import tsx bench/door-load.ts --quick    # 50 streams a side, 2 rounds
 *
 * The gateway (memory storage, `--expose-gc`) runs in a child process with its doors and WebSocket
 * on one port. Its runtime yields a first token at once and holds the rest until this process says
 * "release", so every answer is mid-flight at the same time.
 * - Memory: N door streams (the official `openai` client, one user message each, a new thread
 *   each) are opened and read to their first token; the child then collects garbage and reports
 *   its heap. The baseline is N `message.send`s by one WebSocket device of another owner, held the
 *   same way: the turns' own cost without a door. Heap delta ÷ N, each side from a collected heap.
 * - CPU: the child's `process.cpuUsage()` over N door streams run to their end at once, against N
 *   connected WebSocket devices sending one message each (their hellos before the count; a door's
 *   hello is part of every request, so it counts).
 * @module
 */
import { fork, type ChildProcess } from "node:child_process";
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
const N = quick ? 50 : 100;
const ROUNDS = quick ? 2 : 5;
const TOKEN = "load-ws";
const DOOR_TOKEN = "load-door";

interface Ask {
  ask: "heap" | "cpu" | "release" | "hold" | "free";
}

/** The first token at once, the rest when the bench releases the held answers (at once while not holding). */
function heldRuntime(released: () => Promise<void> | undefined): AgentRuntime {
  return {
    async *turn() {
      yield { type: "text", delta: "first" };
      await released();
      yield { type: "text", delta: " and the rest of the answer." };
    },
  };
}

async function server(): Promise<void> {
  let release: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => (release = resolve));
  let holding = true;
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: heldRuntime(() => (holding ? gate : undefined)),
    authenticator: tokenAuthenticator({ [TOKEN]: "owner-ws", [DOOR_TOKEN]: "owner-door" }),
    logger: { info() {}, warn() {}, error() {} },
    maxConnectionsPerOwner: 10_000,
    maxConnectionsPerIp: 10_000,
    maxTurnsPerOwner: 10_000,
    rateLimit: { perSecond: 1e6, burst: 1e6 },
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
  process.on("message", (m: Ask) => {
    if (m.ask === "release" || m.ask === "free" || m.ask === "hold") {
      holding = m.ask === "hold" || (m.ask === "release" && holding);
      release();
      gate = new Promise<void>((resolve) => (release = resolve));
      process.send!({ ok: true });
    } else if (m.ask === "heap") {
      for (let i = 0; i < 3; i++) globalThis.gc!();
      process.send!({ heap: process.memoryUsage().heapUsed });
    } else {
      const cpu = process.cpuUsage();
      process.send!({ cpu: (cpu.user + cpu.system) / 1000 });
    }
  });
  process.send!({ port: (httpServer.address() as AddressInfo).port });
}

/** Asks the child and waits for its answer. */
function ask<T>(child: ChildProcess, what: Ask["ask"]): Promise<T> {
  return new Promise((resolve) => {
    child.once("message", (m) => resolve(m as T));
    child.send({ ask: what });
  });
}

interface Frame {
  type: string;
  id?: string;
  payload: Record<string, unknown>;
}

/** A connected WebSocket device: `turn` sends a message and resolves at its first text and at its stop. */
async function device(port: number, id: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/gateway`);
  const waiting: Array<(f: Frame) => boolean> = [];
  ws.on("message", (data: Buffer, isBinary) => {
    if (isBinary) return;
    const frame = JSON.parse(String(data)) as Frame;
    for (let i = waiting.length - 1; i >= 0; i--) if (waiting[i]!(frame)) waiting.splice(i, 1);
  });
  const until = (match: (f: Frame) => boolean) =>
    new Promise<Frame>((resolve) =>
      waiting.push((f) => {
        if (!match(f)) return false;
        resolve(f);
        return true;
      }),
    );
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const send = (frame: unknown) => ws.send(JSON.stringify(frame));
  const ok = until((f) => f.id === "h");
  send({ type: "hello", id: "h", payload: { token: TOKEN, device_id: id, caps: { streaming: true, delta: true } } });
  if ((await ok).type !== "hello.ok") throw new Error("hello refused");
  const listed = until((f) => f.id === "l");
  send({ type: "channel.list", id: "l", payload: {} });
  const channels = (await listed).payload.channels as Array<{ chat_id: string; is_default: boolean }>;
  const chatId = channels.find((c) => c.is_default)!.chat_id;
  let n = 0;
  return {
    close: () => ws.close(),
    /** Sends one message into a new thread: resolves `first` at its answer's first text, `done` at its stop. */
    turn() {
      const sid = `s${++n}`;
      // One matcher follows the turn through its frames: several can come in one read, before any
      // promise callback would run.
      let sent: unknown;
      let answer: unknown;
      let sawFirst: () => void = () => undefined;
      const first = new Promise<void>((resolve) => (sawFirst = resolve));
      const done = until((f) => {
        const p = f.payload;
        if (f.id === sid) sent = p.message_id;
        else if (f.type === "message.start" && sent !== undefined && p.reply_to === sent) answer = p.message_id;
        else if (answer !== undefined && p.message_id === answer && f.type === "message.update") sawFirst();
        return answer !== undefined && p.message_id === answer && f.type === "message.stop";
      }).then(() => sawFirst());
      send({
        type: "message.send",
        id: sid,
        payload: { chat_id: chatId, thread_id: null, text: `ws ${sid}`, auto_thread: true },
      });
      return { first, done };
    },
  };
}

/** One door stream: resolves `first` at its first content delta, `done` at its end. */
function doorStream(client: OpenAI, n: number): { first: Promise<void>; done: Promise<void> } {
  let sawFirst: () => void = () => undefined;
  const first = new Promise<void>((resolve) => (sawFirst = resolve));
  const done = (async () => {
    const stream = await client.chat.completions.create({
      model: "default",
      stream: true,
      messages: [{ role: "user", content: `door ${n}` }],
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) sawFirst();
  })();
  return { first, done };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

async function main(): Promise<void> {
  const child = fork(self, ["--server"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    execArgv: [...process.execArgv, "--expose-gc"],
  });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once("message", resolve as never));
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: DOOR_TOKEN, maxRetries: 0 });
  const heap = async () => (await ask<{ heap: number }>(child, "heap")).heap;
  const cpu = async () => (await ask<{ cpu: number }>(child, "cpu")).cpu;
  const held = async (open: () => { first: Promise<void>; done: Promise<void> }): Promise<number> => {
    const before = await heap();
    const streams = Array.from({ length: N }, open);
    // A stream that failed must not leave the wait for first tokens hanging.
    await Promise.race([Promise.all(streams.map((s) => s.first)), Promise.all(streams.map((s) => s.done))]);
    const during = await heap();
    await ask(child, "release");
    await Promise.all(streams.map((s) => s.done));
    return (during - before) / N;
  };
  const burned = async (open: (i: number) => { done: Promise<void> }): Promise<number> => {
    const before = await cpu();
    await Promise.all(Array.from({ length: N }, (_, i) => open(i).done));
    return (await cpu()) - before;
  };
  const one = await device(port, "load-one");
  const fleet = await Promise.all(Array.from({ length: N }, (_, i) => device(port, `load-${i}`)));
  const figures = { doorHeap: [] as number[], wsHeap: [] as number[], doorCpu: [] as number[], wsCpu: [] as number[] };
  let n = 0;
  // A warm-up round of each, uncounted: the first streams compile the door's code.
  await held(() => doorStream(client, n++));
  await held(() => one.turn());
  for (let round = 0; round < ROUNDS; round++) {
    figures.doorHeap.push(await held(() => doorStream(client, n++)));
    figures.wsHeap.push(await held(() => one.turn()));
    await ask(child, "free");
    figures.doorCpu.push(await burned(() => doorStream(client, n++)));
    figures.wsCpu.push(await burned((i) => fleet[i]!.turn()));
    await ask(child, "hold");
  }
  for (const d of [one, ...fleet]) d.close();
  child.kill();
  const load = loadavg()[0]!.toFixed(1);
  const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;
  const dh = median(figures.doorHeap);
  const wh = median(figures.wsHeap);
  const dc = median(figures.doorCpu);
  const wc = median(figures.wsCpu);
  console.log(`${N} streams a side, median of ${ROUNDS} rounds\n`);
  console.log("| figure | measured | baseline | ratio | load |\n| --- | --- | --- | --- | --- |");
  console.log(
    `| heap per open stream, mid-answer | ${kb(dh)} | ${kb(wh)} | ${(dh / wh).toFixed(2)} (+${kb(dh - wh)}) | ${load} |`,
  );
  console.log(
    `| CPU for ${N} streams of one answer | ${dc.toFixed(0)} ms | ${wc.toFixed(0)} ms | ${(dc / wc).toFixed(2)} | ${load} |`,
  );
  console.log(`\n${JSON.stringify(figures)}`);
  process.exit(0);
}

if (process.argv.includes("--server")) void server();
else void main();
