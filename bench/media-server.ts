/**
 * The gateway of bench/media.ts, in a child process of its own: memory storage, `fsMediaStore` in
 * the folder named by its first argument, `maxMediaBytes` 64 MiB (or the file size, if larger).
 * Between `measure-start` and `measure-stop` it samples its memory every 10 ms, its event-loop
 * delay and CPU time, and the bytes its ws server received that the media store has not written.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createGateway, type MediaStore } from "chat-gateway";
import { fsMediaStore } from "chat-gateway/media/fs";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { FILE_BYTES, MiB, type FromServer, type ServerStats, type ToServer } from "./media-wire.js";

const SAMPLE_MS = 10;

/** Chunk bytes the ws server received and the media store wrote, so the sampler can tell queued chunks from garbage. */
interface Flow {
  received: number;
  written: number;
}

/** `fsMediaStore` that adds what it writes to `flow.written`. */
function countingStore(dir: string, flow: Flow): MediaStore {
  const store = fsMediaStore({ dir });
  return {
    read: (owner, mediaId) => store.read(owner, mediaId),
    delete: (owner, ids) => store.delete(owner, ids),
    async createWriter(owner, mediaId) {
      const writer = await store.createWriter(owner, mediaId);
      return {
        write: (chunk) =>
          writer.write(chunk).then(() => {
            flow.written += chunk.byteLength;
          }),
        commit: () => writer.commit(),
        abort: () => writer.abort(),
      };
    },
  };
}

/** Memory, loop delay and CPU time from `start()` until `stop()`. */
function meter(transport: WebSocketTransport, flow: Flow) {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  const counted = new WeakSet<object>();
  let sampler: NodeJS.Timeout | undefined;
  let cpu = process.cpuUsage();
  let base = process.memoryUsage();
  const peak = { rss: 0, arrayBuffers: 0, queued: 0, samples: 0 };
  const sample = () => {
    const usage = process.memoryUsage();
    peak.samples++;
    peak.rss = Math.max(peak.rss, usage.rss);
    peak.arrayBuffers = Math.max(peak.arrayBuffers, usage.arrayBuffers);
    // Chunk payloads, not headers; near enough for a queue depth.
    peak.queued = Math.max(peak.queued, flow.received - flow.written);
  };
  return {
    async start(): Promise<number> {
      for (const ws of transport.wss.clients) {
        if (counted.has(ws)) continue;
        counted.add(ws);
        ws.on("message", (data: Buffer, isBinary) => {
          if (isBinary) flow.received += data.byteLength;
        });
      }
      flow.received = flow.written = 0;
      (globalThis as { gc?: () => void }).gc?.();
      base = process.memoryUsage();
      Object.assign(peak, { rss: base.rss, arrayBuffers: base.arrayBuffers, queued: 0, samples: 0 });
      sampler = setInterval(sample, SAMPLE_MS);
      cpu = process.cpuUsage();
      histogram.reset();
      histogram.enable();
      // The histogram records a delay only from its second tick on: prime it before the work starts.
      await new Promise((resolve) => setTimeout(resolve, 20));
      return base.rss;
    },
    async stop(): Promise<ServerStats> {
      sample();
      await new Promise((resolve) => setTimeout(resolve, 5));
      clearInterval(sampler);
      histogram.disable();
      const used = process.cpuUsage(cpu);
      return {
        kind: "stats",
        baselineRss: base.rss,
        peakRss: peak.rss,
        peakArrayBuffersGrowth: peak.arrayBuffers - base.arrayBuffers,
        peakQueuedBytes: peak.queued,
        samples: peak.samples,
        loopP99Ms: histogram.percentile(99) / 1e6,
        loopMaxMs: histogram.max / 1e6,
        cpuMs: (used.user + used.system) / 1000,
      };
    },
  };
}

async function server(dir: string): Promise<void> {
  const flow: Flow = { received: 0, written: 0 };
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: demoRuntime(),
    mediaStore: countingStore(dir, flow),
    maxMediaBytes: Math.max(64 * MiB, FILE_BYTES),
    logger: { info() {}, warn() {}, error() {} },
  });
  await gateway.start();
  const httpServer = http.createServer((_req, res) => res.writeHead(404).end());
  const transport = attachWebSocket(gateway, { server: httpServer, path: "/ws/gateway" });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const measure = meter(transport, flow);
  process.on("message", async (m: ToServer) => {
    if (m.kind === "measure-start") {
      process.send!({ kind: "started", baselineRss: await measure.start() } satisfies FromServer);
    } else if (m.kind === "measure-stop") {
      process.send!((await measure.stop()) satisfies FromServer);
    } else if (m.kind === "exit") {
      await gateway.close();
      process.exit(0);
    }
  });
  process.on("disconnect", () => process.exit(0));
  process.send!({ kind: "ready", port: (httpServer.address() as AddressInfo).port } satisfies FromServer);
}

await server(process.argv[2]!);
