/**
 * The serving process of bench/storage-sqljs-wire.ts: a gateway on a real ws server on 127.0.0.1
 * over the sql.js storage of `<dir>`, measuring itself. Self-contained (public entries only), so
 * the bench copies it into a baseline worktree and runs the old design the same way.
 *
 * Started with an IPC channel; sends `{ port, t0 }` once listening (t0: the wall clock just before
 * the storage opened), then answers `reset` (clear the figures), `report` (the figures) and
 * `close`.
 * @module
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createGateway } from "chat-gateway";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { attachWebSocket } from "chat-gateway/ws";

const dir = process.argv[2];
const CHATS = 50;
const quiet = { info() {}, warn() {}, error() {} };

function percentiles(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => +(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0).toFixed(2);
  return { p50: at(50), p99: at(99), max: at(100), n: s.length };
}

/** Peak resident memory of this process's children (the database process), MB, from /proc. */
function childrenPeakMB(): number[] {
  const out: number[] = [];
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    const kids = readFileSync(`/proc/${process.pid}/task/${task}/children`, "utf8").trim();
    for (const pid of kids ? kids.split(/\s+/) : []) {
      // Only the database process (a helper such as esbuild's service is none of the storage's).
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("sqljs-engine")) continue;
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (hwm) out.push(Math.round(Number(hwm[1]) / 1024));
    }
  }
  return out;
}

function newestSnapshotMB(): number {
  const snaps = readdirSync(dir)
    .filter((n) => /^snapshot-\d+\.db$/.test(n))
    .sort();
  return snaps.length ? Math.round(statSync(join(dir, snaps.at(-1)!)).size / 1024 / 1024) : 0;
}

// SNAPSHOT_BYTES: take a snapshot every so many journal bytes, so that a short run meets several.
const every = process.env.SNAPSHOT_BYTES ? Number(process.env.SNAPSHOT_BYTES) : undefined;
const storage = sqlJsStorage({
  dir,
  snapshotMinBytes: every,
  snapshotMaxBytes: every,
  onWarning: (m) => process.stderr.write(`${m}\n`),
});
const commits: number[] = [];
const searches: number[] = [];
for (const [name, samples] of [
  ["commit", commits],
  ["search", searches],
] as const) {
  const original = storage[name].bind(storage) as (...args: unknown[]) => Promise<unknown>;
  (storage as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
    const t = performance.now();
    try {
      return await original(...args);
    } finally {
      samples.push(performance.now() - t);
    }
  };
}

const eld = monitorEventLoopDelay({ resolution: 1 });
const t0 = Date.now();
const gateway = createGateway({
  storage,
  runtime: demoRuntime({ delayMs: 0, chunkChars: 4000 }),
  mediaStore: memoryMediaStore(),
  logger: quiet,
  rateLimit: { perSecond: 1e6, burst: 1e6 },
  maxTurnsPerOwner: 100_000,
  maxConnectionsPerOwner: 256,
});
await gateway.start();
// The chats the writers and the corpus use (bench/corpus.ts): a send needs its channel to exist.
await storage.commit("~anonymous", {
  channels: Array.from({ length: CHATS }, (_, i) => ({
    chat_id: `chat${i}`,
    name: `chat ${i}`,
    kind: "channel" as const,
    parent_chat_id: null,
    is_default: false,
    archived: false,
  })),
});
const server = http.createServer((_req, res) => res.writeHead(404).end());
const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
eld.enable();
process.send!({ port: (server.address() as AddressInfo).port, t0, timeOrigin: performance.timeOrigin });

process.on("message", async (m: { t: string }) => {
  if (m.t === "reset") {
    eld.reset();
    commits.length = 0;
    searches.length = 0;
    process.send!({ t: "reset" });
  } else if (m.t === "report") {
    const ms = (ns: number) => +(ns / 1e6).toFixed(2);
    process.send!({
      t: "report",
      loopDelay: { p50: ms(eld.percentile(50)), p99: ms(eld.percentile(99)), max: ms(eld.max) },
      commit: percentiles(commits),
      // Stalls a percentile hides: a snapshot or a growth of the database makes a few long ones.
      slowCommits: Object.fromEntries(
        [100, 250, 1000].map((ms) => [`over${ms}ms`, commits.filter((c) => c > ms).length]),
      ),
      search: percentiles(searches),
      servingPeakMB: Math.round(process.resourceUsage().maxRSS / 1024),
      databaseProcessPeakMB: childrenPeakMB(),
      snapshotMB: newestSnapshotMB(),
      newestSnapshot: readdirSync(dir)
        .filter((n) => /^snapshot-\d+\.db$/.test(n))
        .sort()
        .at(-1),
    });
  } else if (m.t === "close") {
    await gateway.close();
    await transport.close();
    server.closeAllConnections();
    server.close();
    process.exit(0);
  }
});
