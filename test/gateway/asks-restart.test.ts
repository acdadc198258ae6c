// A restart in the middle of an ask (docs/PROTOCOL.md §11): a real gateway process on a sql.js
// folder is killed (a crash) or shut down; the next start resolves the ask as interrupted and a
// device closes its card on sync. The lane's chosen model survives the restart.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { fixtureCommand } from "../fixtures/example-server-bundle.js";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Harness } from "./harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PICKERS = { caps: { pickers: true } };

let h: Harness | undefined;
let child: ChildProcess | undefined;
let dir: string | undefined;
afterEach(async () => {
  child?.kill("SIGKILL");
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  h = child = dir = undefined;
});

/** Start the gateway process; resolves with its WebSocket URL. */
async function startProcess(folder: string): Promise<string> {
  child = spawn(...fixtureCommand("ask-gateway-process", [folder]), {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child!.stdout!.on("data", (chunk) => {
      out += String(chunk);
      const match = /port (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child!.once("exit", (code) => reject(new Error(`gateway process exited with ${code}`)));
  });
  return `ws://127.0.0.1:${port}/ws/gateway`;
}

async function ended(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const exit = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill(signal);
  await exit;
}

for (const [how, signal] of [
  ["a crash", "SIGKILL"],
  ["a shutdown", "SIGTERM"],
] as const) {
  it(`asks restart - after ${how} mid-ask the ask is resolved interrupted, and a device learns it by sync`, async () => {
    dir = await mkdtemp(join(tmpdir(), "asks-restart-"));
    const url = await startProcess(dir);
    const a = await Client.connect(url, PICKERS);
    await a.request("message.send", { chat_id: "default", text: "model:" });
    const model = await a.waitFor((f) => f.type === "picker.model");
    await a.request("picker.select", { picker_id: model.payload.picker_id, option_id: "demo-fast" });
    await a.waitFor((f) => f.type === "message.stop" && f.payload.final_text === "Model: demo-fast");
    await a.request("message.send", { chat_id: "default", text: "approve: across a restart" });
    const card = await a.waitFor((f) => f.type === "picker.approval");
    await ended(child!, signal);
    child = undefined;

    h = await startGateway({ storage: sqlJsStorage({ dir }) });
    const b = await Client.connect(h.url, PICKERS);
    await b.request("sync", { cursor: 0 });
    const resolved = b.of("picker.resolved").filter((f) => f.payload.picker_id === card.payload.picker_id);
    expect(resolved).toHaveLength(1);
    expect(resolved[0]!.payload).toMatchObject({ outcome: "interrupted", chat_id: "default", thread_id: null });
    const stop = b.of("message.stop").find((f) => f.payload.message_id === card.payload.message_id)!;
    expect(stop.payload.status).toBe("interrupted");
    // A late answer learns the outcome that stands; the lane keeps its model.
    expect(
      (await b.request("picker.select", { picker_id: card.payload.picker_id, option_id: "approve" })).payload.outcome,
    ).toBe("interrupted");
    const next = await b.say({ chat_id: "default", text: "still fast?" });
    expect(next.final.payload.runtime.model).toBe("demo-fast");
  }, 30_000);
}
