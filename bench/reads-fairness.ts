/**
 * Fairness of the sql.js database process: how long one owner's `history {limit: 1}` waits while
 * another owner floods the process with expensive reads over long messages (issue 27, item 4).
 *
 * One owner ("big") stores `--messages` (default 100) messages of `--mib` (default 1) MiB each, all
 * holding the searched word, with an outbox frame each. Then, per flood kind, `--flood` (default 4)
 * reads of "big" are sent at once and, one tick later, a `history {limit: 1}` of another owner
 * ("small"); the figure is how long that history took, next to the flood's own time. Flood kinds:
 * `search` (the word every message holds), `history` (`limit: 200`), `sync` (`readOutbox` from 0,
 * 500 frames). Each kind runs `--rounds` (default 5) times; the median and the worst are printed.
 *
 *   node --import tsx bench/reads-fairness.ts
 *   node --import tsx bench/reads-fairness.ts --messages=100 --flood=4 --rounds=5
 *
 * The storage runs as in production: its own database process. Prints JSON.
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StoredMessage } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const MESSAGES = Number(args.messages ?? 100);
const MIB = Number(args.mib ?? 1);
const FLOOD = Number(args.flood ?? 4);
const ROUNDS = Number(args.rounds ?? 5);

const WORDS = Array.from({ length: 2000 }, (_, i) => `w${i.toString(36)}x`);

/** About `bytes` of text: common words, and the searched word `needle` every 5,000 characters. */
function longText(bytes: number, seed: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const word = i % 800 === 0 ? "needle" : WORDS[(i * 7919 + seed) % WORDS.length]!;
    parts.push(word);
    size += word.length + 1;
  }
  return parts.join(" ");
}

function message(i: number, text: string): StoredMessage {
  return {
    message_id: `m${i}`,
    role: "user",
    text,
    reasoning: "",
    ts: 1_700_000_000_000 + i,
    media: [],
    chat_id: "default",
    thread_id: null,
  };
}

async function fill(storage: Storage): Promise<void> {
  for (let i = 0; i < MESSAGES; i++) {
    const m = message(i, longText(MIB * 1024 * 1024, i));
    await storage.commit("big", { messages: [m], outbox: [{ type: "message", payload: { ...m } }] });
  }
  const m = message(0, "hello");
  await storage.commit("small", { messages: [m], outbox: [{ type: "message", payload: { ...m } }] });
}

const FLOODS: Record<string, (storage: Storage) => Promise<unknown>> = {
  search: (storage) => storage.search("big", { query: "needle", scope: "all", limit: 100 }),
  history: (storage) => storage.history("big", { chat_id: "default", thread_id: null, limit: 200 }),
  sync: (storage) => storage.readOutbox("big", 0, 500),
};

async function round(storage: Storage, kind: string): Promise<{ otherMs: number; floodMs: number }> {
  const start = performance.now();
  const flood = Promise.all(Array.from({ length: FLOOD }, () => FLOODS[kind]!(storage)));
  await new Promise((resolve) => setImmediate(resolve));
  const asked = performance.now();
  await storage.history("small", { chat_id: "default", thread_id: null, limit: 1 });
  const otherMs = performance.now() - asked;
  await flood;
  return { otherMs, floodMs: performance.now() - start };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r1 = (x: number) => Math.round(x * 10) / 10;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cg-fair-"));
  const storage = sqlJsStorage({ dir });
  try {
    await storage.open();
    const filled = performance.now();
    await fill(storage);
    const results: Record<string, unknown> = {
      messages: MESSAGES,
      mib: MIB,
      flood: FLOOD,
      fillS: r1((performance.now() - filled) / 1000),
    };
    for (const kind of (args.kinds ?? "search,history,sync").split(",")) {
      const runs: Array<{ otherMs: number; floodMs: number }> = [];
      for (let i = 0; i < ROUNDS; i++) runs.push(await round(storage, kind));
      const other = runs.map((r) => r.otherMs);
      results[kind] = {
        otherMedianMs: r1(median(other)),
        otherWorstMs: r1(Math.max(...other)),
        floodMedianMs: r1(median(runs.map((r) => r.floodMs))),
      };
      console.error(kind, JSON.stringify(results[kind]));
    }
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await storage.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
