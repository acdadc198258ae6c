// Durable pushes (docs/PROTOCOL.md §21.6) across a crash: a real gateway process with the ntfy
// sender posting to a stand-in server stores an answer's push before it waits `pushAfterMs`, and
// is killed (SIGKILL) before the push falls due. A restart on the same sql.js folder, or another
// process on the same PostgreSQL schema that never stored it, sends it exactly once.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { fixtureCommand } from "../fixtures/example-server-bundle.js";
import { Client } from "../gateway/harness.js";
import { dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PUSH_AFTER_MS = 1_500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A gateway process, what it printed, and its WebSocket URL. */
interface GatewayProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

const children: ChildProcess[] = [];
const clients: Client[] = [];
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function startProcess(kind: "sqljs" | "postgres", where: string, ntfy: string): Promise<GatewayProcess> {
  const child = spawn(...fixtureCommand("due-push-gateway-process", [kind, where, ntfy, String(PUSH_AFTER_MS)]), {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (chunk) => (out += String(chunk)));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", () => {
      const match = /port (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`gateway process exited with ${code}: ${out}`)));
  });
  return { child, url: `ws://127.0.0.1:${port}/ws/gateway`, output: () => out };
}

async function killed(proc: GatewayProcess): Promise<void> {
  const exit = new Promise((resolve) => proc.child.once("exit", resolve));
  proc.child.kill("SIGKILL");
  await exit;
}

async function waitUntil(what: string, done: () => boolean, ms = 30_000): Promise<void> {
  for (let waited = 0; !done(); waited += 20) {
    if (waited > ms) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

/**
 * A phone with an ntfy topic stays connected while an answer finishes; the process is killed once
 * the push is stored, well before it falls due. Resolves with the answer's text.
 */
async function answerThenCrash(proc: GatewayProcess, topic: string): Promise<string> {
  const phone = await Client.connect(proc.url, { device_id: "phone", caps: { push: "ntfy" }, ntfy_topic: topic });
  clients.push(phone);
  const echo = await phone.request("message.send", { chat_id: "default", text: "push me after a crash" });
  const stop = await phone.waitFor(
    (f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id,
    30_000,
  );
  await waitUntil("the push is stored", () => proc.output().includes(`stored m:${stop.payload.message_id}`));
  await killed(proc);
  return String(stop.payload.final_text);
}

/** The posts the stand-in ntfy server got for the topic, once the first came and a while passed. */
async function pushesTo(server: RecordingServer, topic: string): Promise<string[]> {
  const posts = () => server.requests.filter((r) => r.method === "POST" && r.url === `/ntfy/${topic}`);
  await waitUntil("the push arrives", () => posts().length > 0);
  // Long enough for a second send to show: another due time, the grace and several passes.
  await sleep(PUSH_AFTER_MS + 3_000);
  return posts().map((r) => r.body);
}

const available = await postgresAvailable("durable pushes: postgres");

describe("durable pushes across a crash", { timeout: 120_000 }, () => {
  test("durable push - sql.js: killed before pushAfterMs, the restarted process pushes the answer exactly once", async () => {
    const server = await recordingServer(() => ({ json: { id: "ntfy-1" } }));
    const dir = await mkdtemp(join(tmpdir(), "cg-duepush-"));
    cleanups.push(
      () => server.close(),
      () => rm(dir, { recursive: true, force: true }),
    );
    const first = await startProcess("sqljs", dir, `${server.url}/ntfy`);
    const text = await answerThenCrash(first, "alice-phone");
    expect(server.requests).toEqual([]);
    await startProcess("sqljs", dir, `${server.url}/ntfy`);
    expect(await pushesTo(server, "alice-phone")).toEqual([text.slice(0, 200)]);
  });

  test.skipIf(!available)(
    "durable push - PostgreSQL: of two processes, the one that did not store the push sends it once after the other is gone",
    async () => {
      const server = await recordingServer(() => ({ json: { id: "ntfy-1" } }));
      const schema = `t_${runId()}`;
      cleanups.push(
        () => server.close(),
        () => dropSchema(schema),
      );
      const a = await startProcess("postgres", schema, `${server.url}/ntfy`);
      const b = await startProcess("postgres", schema, `${server.url}/ntfy`);
      const text = await answerThenCrash(a, "bob-phone");
      expect(b.output()).not.toContain("stored");
      expect(await pushesTo(server, "bob-phone")).toEqual([text.slice(0, 200)]);
    },
  );
});
