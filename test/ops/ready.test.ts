// GET /api/ready (docs/PROTOCOL.md §18): 200 {ok: true} while the storage answers (and the bus is
// connected), public even with login on and for a probe that names no allowed Host; 503 {ok: false},
// with no details, when the storage fails or the bus is down, and while the sql.js database
// process is stopped (a read the storage answers from its cache must not hide that).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path, { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { serveReady, type ReadyChecks } from "../../examples/server/ready.js";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { startServerProcess } from "../example-server-process.js";
import { HASHES, writeUsers } from "../http/helpers.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function get(
  base: string,
  pathname: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${pathname}`, { headers });
  return { status: res.status, body: await res.json() };
}

/** serveReady alone on a real HTTP server. */
async function readyServer(checks: ReadyChecks): Promise<string> {
  const server = http.createServer(
    (req, res) => void serveReady(checks, req, res).then((done) => done || res.writeHead(404).end("{}")),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

it("ready - the example server answers 200 {ok: true}, with login on, without a session and to a foreign Host", async () => {
  const temp = await tempDir();
  cleanups.push(temp.cleanup);
  const usersFile = path.join(temp.dir, "users.json");
  await writeUsers(usersFile, { alice: HASHES["alice-password"] });
  const server: RunningServer = await startExample(temp.dir, 0, usersFile);
  cleanups.push(() => server.close());
  expect(await get(server.url, "/api/ready")).toEqual({ status: 200, body: { ok: true } });
  expect(await get(server.url, "/api/ready", { host: "probe.internal" })).toEqual({ status: 200, body: { ok: true } });
  // The rest of /api/ is still behind the login.
  expect((await get(server.url, "/api/auth/users")).status).toBe(401);
});

it("ready - 503 {ok: false} when the storage fails, and when the bus is down", async () => {
  const storage = memoryStorage();
  let failing = false;
  const flaky: Storage = {
    ...storage,
    ping: () => (failing ? Promise.reject(new Error("db down: secret detail")) : storage.ping()),
  };
  let busUp = true;
  const base = await readyServer({ storage: flaky, busConnected: () => busUp, draining: () => false });
  expect(await get(base, "/api/ready")).toEqual({ status: 200, body: { ok: true } });
  failing = true;
  expect(await get(base, "/api/ready")).toEqual({ status: 503, body: { ok: false } });
  failing = false;
  busUp = false;
  expect(await get(base, "/api/ready")).toEqual({ status: 503, body: { ok: false } });
});

it("ready - 503 while draining; other methods 405", async () => {
  const base = await readyServer({ storage: memoryStorage(), draining: () => true });
  expect(await get(base, "/api/ready")).toEqual({ status: 503, body: { ok: false } });
  expect((await fetch(`${base}/api/ready`, { method: "POST" })).status).toBe(405);
});

/** The pid of the example server's sql.js database process (a forked child running the engine). */
function engineChild(serverPid: number): number {
  const children = readFileSync(`/proc/${serverPid}/task/${serverPid}/children`, "utf8").trim().split(/\s+/);
  const engine = children.filter((pid) => /engine/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8")));
  expect(engine).toHaveLength(1);
  return Number(engine[0]);
}

it("ready - 503 {ok: false} while the sql.js database process is stopped, 200 again once it runs", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "gw-ready-"));
  const server = await startServerProcess({ GATEWAY_DATA_DIR: dataDir });
  let engine: number | undefined;
  cleanups.push(async () => {
    if (engine !== undefined) process.kill(engine, "SIGCONT");
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  expect(await get(server.base, "/api/ready")).toEqual({ status: 200, body: { ok: true } });
  engine = engineChild(server.child.pid!);
  process.kill(engine, "SIGSTOP");
  expect(await get(server.base, "/api/ready")).toEqual({ status: 503, body: { ok: false } });
  expect(await get(server.base, "/api/ready")).toEqual({ status: 503, body: { ok: false } });
  process.kill(engine, "SIGCONT");
  engine = undefined;
  expect(await get(server.base, "/api/ready")).toEqual({ status: 200, body: { ok: true } });
}, 60_000);
