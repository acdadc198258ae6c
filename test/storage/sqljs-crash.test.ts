import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";
import { fixtureCommand } from "../fixtures/example-server-bundle.js";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const ROUNDS = 20;

let dir: string;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs the writer until a random moment, kills it with SIGKILL, and returns what it acknowledged. */
async function runAndKill(round: number): Promise<{ acks: Map<string, number>; stderr: string }> {
  const child = spawn(...fixtureCommand("sqljs-crash-writer", [dir, String(round)]), {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const acks = new Map<string, number>();
  let stderr = "";
  let buffered = "";
  let working!: () => void;
  const isWorking = new Promise<void>((r) => (working = r));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines) {
      const m = /^ack (\S+) (\d+)$/.exec(line);
      if (m) {
        acks.set(m[1], Number(m[2]));
        working();
      }
    }
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_code, signal) => r(signal)));
  await Promise.race([isWorking, exited]);
  // Random moments once writes flow: some kills land mid-batch, some mid-snapshot or rotation.
  await new Promise((r) => setTimeout(r, Math.random() * 300));
  child.kill("SIGKILL");
  expect(await exited, stderr).toBe("SIGKILL");
  return { acks, stderr };
}

test("crash - SIGKILL at random moments loses no acknowledged write and leaves no half write", {
  timeout: 120_000,
}, async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-sqljs-crash-"));
  const acknowledged = new Map<string, number>();
  let totalAcks = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const { acks } = await runAndKill(round);
    totalAcks += acks.size;
    for (const [id, seq] of acks) acknowledged.set(id, seq);

    const warnings: string[] = [];
    const storage = sqlJsStorage({ dir, onWarning: (m) => warnings.push(m) });
    await storage.open();
    try {
      const outbox = await storage.readOutbox("crash", 0, 1e9);
      const bounds = await storage.outboxBounds("crash");
      expect(outbox.map((e) => e.seq)).toEqual(Array.from({ length: bounds.last }, (_, i) => i + 1));
      const bySeq = new Map(outbox.map((e) => [e.seq, e.payload.id as string]));
      for (const [id, seq] of acknowledged) {
        expect(bySeq.get(seq), `round ${round}: outbox frame ${seq} of ${id}`).toBe(id);
      }
      // Each commit wrote one channel, one message and one frame with the same id: all or none.
      const channels = new Set((await storage.listChannels("crash")).map((c) => c.chat_id));
      const frames = new Set(bySeq.values());
      expect(channels.size).toBe(frames.size);
      for (const id of frames) {
        expect(channels.has(id), `round ${round}: channel of ${id}`).toBe(true);
        const m = await storage.getMessage("crash", id);
        expect(m?.text, `round ${round}: message of ${id}`).toBe(`message ${id} ${"x".repeat(200)}`);
      }
      for (const id of acknowledged.keys()) expect(channels.has(id)).toBe(true);
      const page = await storage.history("crash", {
        chat_id: [...acknowledged.keys()].at(-1) ?? "none",
        thread_id: null,
        limit: 5,
      });
      expect(page!.messages.length).toBe(acknowledged.size ? 1 : 0);
    } finally {
      await storage.close();
    }
  }
  // The kills must have interrupted real work, or the test proves nothing.
  expect(totalAcks).toBeGreaterThan(ROUNDS * 5);
});
