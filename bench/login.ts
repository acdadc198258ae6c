// Login benchmark of chat-gateway/login: `node --import tsx bench/login.ts`.
//
// The server (this process) runs the login protection with its default bcrypt pool (2 workers)
// and a plain ws server that streams a reply to 10 devices (one frame each per 15 ms, the demo
// runtime's pace). A child process plays the devices and the people logging in, so that the
// event-loop delay measured here is the server's alone. Figures go to bench/NOTES.md, and the
// newest to bench/RESULTS.md.
import { fork } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import bcrypt from "bcryptjs";
import { WebSocket, WebSocketServer } from "ws";
import { createLoginProtection, hashPassword, UserStore } from "chat-gateway/login";

const DEVICES = 10;
const AT_ONCE = 20;
const ROUNDS = 3;
const STORM = 100;
const FRAME_MS = 15;
const PASSWORD = "bench-password";

type ToServer =
  | { kind: "start"; phase: string }
  | {
      kind: "end";
      phase: string;
      logins?: number;
      ms?: number;
      statuses?: Record<string, number>;
      maxGapMs?: number;
      frames?: number;
    }
  | { kind: "done" };

async function client(url: string, token: string): Promise<void> {
  const send = (m: ToServer) => new Promise<void>((resolve) => process.send!(m, () => resolve()));
  const arrivals: number[][] = Array.from({ length: DEVICES }, () => []);
  const sockets = await Promise.all(
    Array.from(
      { length: DEVICES },
      (_, i) =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(`${url.replace("http", "ws")}/ws/gateway`, {
            headers: { authorization: `Bearer ${token}` },
          });
          ws.on("message", () => arrivals[i]!.push(performance.now()));
          ws.on("open", () => resolve(ws));
          ws.on("error", reject);
        }),
    ),
  );
  const window = async (phase: string, work: () => Promise<{ logins?: number; statuses?: Record<string, number> }>) => {
    await send({ kind: "start", phase });
    const from = arrivals.map((a) => a.length);
    const t0 = performance.now();
    const result = await work();
    const ms = performance.now() - t0;
    let maxGapMs = 0;
    let frames = 0;
    arrivals.forEach((a, i) => {
      const seen = a.slice(from[i]);
      frames += seen.length;
      for (let k = 1; k < seen.length; k++) maxGapMs = Math.max(maxGapMs, seen[k]! - seen[k - 1]!);
    });
    await send({ kind: "end", phase, ms, maxGapMs, frames, ...result });
  };
  const logins = async (n: number) => {
    const statuses: Record<string, number> = {};
    await Promise.all(
      Array.from({ length: n }, async () => {
        const res = await fetch(`${url}/api/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "alice", password: PASSWORD }),
        });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }),
    );
    return { logins: n, statuses };
  };
  await window("baseline (streaming, no logins, 2 s)", () => new Promise((r) => setTimeout(() => r({}), 2000)));
  for (let round = 1; round <= ROUNDS; round++)
    await window(`${AT_ONCE} logins at once, round ${round}`, () => logins(AT_ONCE));
  await window(`storm: ${STORM} logins at once`, () => logins(STORM));
  for (const ws of sockets) ws.close();
  await send({ kind: "done" });
}

/** The login protection and a ws server streaming to every device, on 127.0.0.1; a token for alice. */
async function startServer(): Promise<{ url: string; token: string; close(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "cg-bench-login-"));
  const usersFile = path.join(dir, "users.json");
  await new UserStore(usersFile).add("alice", await hashPassword(PASSWORD));
  const protection = createLoginProtection({ usersFile });
  const wss = new WebSocketServer({ noServer: true });
  const httpServer = http.createServer(async (req, res) => {
    if (!(await protection.handle(req, res))) res.writeHead(404).end();
  });
  httpServer.on("upgrade", async (req, socket, head) => {
    const decision = await protection.authorizeUpgrade(req);
    if (!decision.ok) return void socket.end(`HTTP/1.1 ${decision.status} x\r\nConnection: close\r\n\r\n`);
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit("connection", ws, req));
  });
  let n = 0;
  const stream = setInterval(() => {
    const frame = JSON.stringify({
      type: "message.delta",
      payload: { chat_id: "c1", thread_id: null, text: `piece ${n++} ` },
    });
    for (const ws of wss.clients) ws.send(frame);
  }, FRAME_MS);
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  const { token } = await fetch(`${url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "alice", password: PASSWORD }),
  }).then((r) => r.json() as Promise<{ token: string }>);
  const close = async () => {
    clearInterval(stream);
    for (const ws of wss.clients) ws.terminate();
    httpServer.closeAllConnections();
    httpServer.close();
    await protection.close();
    await rm(dir, { recursive: true, force: true });
  };
  return { url, token, close };
}

/** Runs the client child: one table row per phase, with this process's event-loop delay during it. */
async function phases(url: string, token: string): Promise<{ rows: string[]; totalLogins: number; totalMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  const out = { rows: [] as string[], totalLogins: 0, totalMs: 0 };
  const child = fork(fileURLToPath(import.meta.url), ["--client", url, token]);
  await new Promise<void>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`client exited with ${code}`))));
    child.on("message", (m: ToServer) => {
      if (m.kind === "start") {
        histogram.reset();
        histogram.enable();
      } else if (m.kind === "end") {
        histogram.disable();
        const p = (q: number) => (histogram.percentile(q) / 1e6).toFixed(1);
        const rate = m.logins ? ((m.statuses?.["200"] ?? 0) / (m.ms! / 1000)).toFixed(1) : "–";
        if (m.logins && m.phase.includes("round")) {
          out.totalLogins += m.statuses?.["200"] ?? 0;
          out.totalMs += m.ms!;
        }
        const statuses = m.statuses
          ? Object.entries(m.statuses)
              .map(([s, c]) => `${c}×${s}`)
              .join(", ")
          : "–";
        out.rows.push(
          `| ${m.phase} | ${(m.ms! / 1000).toFixed(2)} s | ${statuses} | ${rate} | ${p(50)} | ${p(99)} | ${(histogram.max / 1e6).toFixed(1)} | ${m.maxGapMs!.toFixed(1)} |`,
        );
      }
    });
  });
  return out;
}

/** For contrast: the same bcrypt on the main thread (bcryptjs async compare), no worker pool; its table row. */
async function contrast(): Promise<string> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  const hash = await hashPassword(PASSWORD);
  histogram.reset();
  histogram.enable();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 4 }, () => bcrypt.compare(PASSWORD, hash)));
  const mainMs = performance.now() - t0;
  histogram.disable();
  return `| for contrast: 4 bcryptjs async compares on the event loop, no pool | ${(mainMs / 1000).toFixed(2)} s | – | ${(4 / (mainMs / 1000)).toFixed(1)} | ${(histogram.percentile(50) / 1e6).toFixed(1)} | ${(histogram.percentile(99) / 1e6).toFixed(1)} | ${(histogram.max / 1e6).toFixed(1)} | – |`;
}

async function server(): Promise<void> {
  const running = await startServer();
  const { rows, totalLogins, totalMs } = await phases(running.url, running.token);
  const contrastRow = await contrast();
  await running.close();

  console.log(
    `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), bcrypt cost 12, 2 workers, login queue 32, ${DEVICES} devices streaming a frame each per ${FRAME_MS} ms.\n`,
  );
  console.log(
    "| phase | wall time | answers | logins/s | loop delay p50 (ms) | p99 (ms) | max (ms) | longest gap between frames at a device (ms) |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const row of rows) console.log(row);
  console.log(contrastRow);
  console.log(`\nSustained: ${(totalLogins / (totalMs / 1000)).toFixed(1)} logins/s over ${totalLogins} logins.`);
}

if (process.argv[2] === "--client") await client(process.argv[3]!, process.argv[4]!);
else await server();
