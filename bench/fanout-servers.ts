/**
 * The servers of bench/fanout.ts, each run in a child process of its own: `node fanout-servers.ts
 * <side> <chunk characters>`, side `gateway` (demo runtime with no delay), `paced` (the demo
 * runtime's default pace, delayMs 15) or `bare` (a plain ws server sending the full text so far on
 * every delta). Between `measure-start` and `measure-stop` each reports its event-loop delay, CPU
 * time and the bytes it wrote to its sockets.
 * @module
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { WebSocketServer } from "ws";
import { createGateway } from "chat-gateway";
import { gatewayMetrics } from "chat-gateway/metrics";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";

export type Side = "gateway" | "bare" | "paced";

/** Messages between bench/fanout.ts and a server child. */
export type ToServer = { kind: "measure-start" } | { kind: "measure-stop" } | { kind: "exit" };
export type FromServer =
  | { kind: "ready"; port: number }
  | { kind: "started" }
  | { kind: "stats"; loopP50Ms: number; loopP99Ms: number; loopMaxMs: number; wireBytes: number; cpuMs: number };

const [side, chunkArg] = process.argv.slice(2) as [Side, string];
const CHUNK_CHARS = Number(chunkArg);

/** Event-loop delay, CPU time and socket bytes between measure-start and measure-stop. */
function instrument(sockets: Set<Socket>): void {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let cpu = process.cpuUsage();
  let written = 0;
  const bytesWritten = () => [...sockets].reduce((n, s) => n + s.bytesWritten, 0);
  process.on("message", async (m: ToServer) => {
    if (m.kind === "measure-start") {
      written = bytesWritten();
      cpu = process.cpuUsage();
      histogram.reset();
      histogram.enable();
      // The histogram records a delay only from its second tick on: prime it before the work starts.
      await new Promise((resolve) => setTimeout(resolve, 20));
      process.send!({ kind: "started" } satisfies FromServer);
    } else if (m.kind === "measure-stop") {
      // One more timer tick, so a stall that ended just before this message is recorded too.
      await new Promise((resolve) => setTimeout(resolve, 5));
      histogram.disable();
      const used = process.cpuUsage(cpu);
      process.send!({
        kind: "stats",
        loopP50Ms: histogram.percentile(50) / 1e6,
        loopP99Ms: histogram.percentile(99) / 1e6,
        loopMaxMs: histogram.max / 1e6,
        wireBytes: bytesWritten() - written,
        cpuMs: (used.user + used.system) / 1000,
      } satisfies FromServer);
    } else if (m.kind === "exit") {
      process.exit(0);
    }
  });
  process.on("disconnect", () => process.exit(0));
}

function trackSockets(server: http.Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on("upgrade", (_req, socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  return sockets;
}

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function gatewayServer(delayMs: number): Promise<void> {
  const quiet = { info() {}, warn() {}, error() {} };
  // BENCH_METRICS=1: what the metrics cost (docs/PROTOCOL.md §18.3), scraped as Prometheus would.
  const metrics = process.env.BENCH_METRICS === "1" ? gatewayMetrics() : undefined;
  const gateway = createGateway({
    storage: metrics ? metrics.storage(memoryStorage()) : memoryStorage(),
    runtime: demoRuntime({ chunkChars: CHUNK_CHARS, delayMs }),
    logger: quiet,
    // Every bench device is the same owner on 127.0.0.1: lift the per-owner and per-address caps.
    maxConnectionsPerOwner: 10_000,
    maxConnectionsPerIp: 10_000,
    rateLimitPerAddress: { perSecond: 1e6, burst: 1e6 },
    rateLimitPerOwner: { perSecond: 1e6, burst: 1e6 },
  });
  await gateway.start();
  if (metrics) {
    metrics.observe(gateway);
    setInterval(() => void metrics.metrics(), 1_000).unref();
  }
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  attachWebSocket(gateway, { server, path: "/ws/gateway" });
  instrument(trackSockets(server));
  process.send!({ kind: "ready", port: await listen(server) } satisfies FromServer);
}

async function bareServer(): Promise<void> {
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  const runtime = demoRuntime({ chunkChars: CHUNK_CHARS, delayMs: 0 });
  let turn = 0;
  wss.on("connection", (ws) => {
    ws.on("message", async (data) => {
      const { text: said } = JSON.parse(String(data)) as { text: string };
      const messageId = `m${++turn}`;
      const input = {
        owner: "bench",
        chat_id: "default",
        thread_id: null,
        message: { message_id: `u${turn}`, text: said, media: [] },
        history: [],
        signal: new AbortController().signal,
        readMedia: () => Promise.reject(new Error("no media")),
        ask: async () => ({ outcome: "cancelled" as const }),
      };
      let text = "";
      for await (const event of runtime.turn(input)) {
        if (event.type !== "text") continue;
        text += event.delta;
        // Naive: the whole text so far on every delta, serialised once for all clients.
        const frame = JSON.stringify({
          type: "message.update",
          payload: { message_id: messageId, text, chat_id: "default", thread_id: null },
        });
        for (const client of wss.clients) client.send(frame);
      }
    });
  });
  instrument(trackSockets(server));
  process.send!({ kind: "ready", port: await listen(server) } satisfies FromServer);
}

await (side === "bare" ? bareServer() : gatewayServer(side === "paced" ? 15 : 0));
