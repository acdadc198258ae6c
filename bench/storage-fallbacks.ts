/**
 * What the core's storage fallbacks cost: the same memory storage with its own `search` and
 * `findByClientMsgId`, and wrapped down to the required core so `defineStorage()` fills both in
 * (paging through `history`). Same process, same corpus (bench/corpus.ts), alternating runs.
 *
 *   node --import tsx bench/storage-fallbacks.ts                 # 10,000 and 30,000 messages
 *   node --import tsx bench/storage-fallbacks.ts --sizes=10000
 *
 * Prints a Markdown table (ms per call, p50/p99, and fallback ÷ native) and the load average.
 * @module
 */
import { loadavg } from "node:os";
import { defineStorage } from "chat-gateway/storage";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { CHATS, COMMON, OWNER, RARE, message, timed } from "./corpus.js";

const sizesArg = process.argv.slice(2).find((a) => a.startsWith("--sizes="));
const sizes = sizesArg ? sizesArg.slice(8).split(",").map(Number) : [10_000, 30_000];

/** The same data, seen through the required core only. */
function coreOnly(full: Storage): Storage {
  const { commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice } = full;
  return defineStorage({ commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice });
}

async function fill(size: number): Promise<Storage> {
  const storage = memoryStorage();
  const channels = Array.from({ length: CHATS }, (_, i) => ({
    chat_id: `chat${i}`,
    name: `chat ${i}`,
    kind: "channel" as const,
    parent_chat_id: null,
    is_default: false,
    archived: false,
  }));
  await storage.commit(OWNER, { channels });
  for (let i = 0; i < size; i += 1000) {
    const messages = Array.from({ length: Math.min(1000, size - i) }, (_, k) => ({
      ...message(i + k, size),
      client_msg_id: `key${i + k}`,
    }));
    await storage.commit(OWNER, { messages });
  }
  return storage;
}

const CASES: Array<{ name: string; runs: number; call: (s: Storage, size: number, k: number) => Promise<unknown> }> = [
  {
    name: "search, rare word, all chats",
    runs: 10,
    call: (s) => s.search(OWNER, { query: RARE, scope: "all", limit: 20 }),
  },
  {
    name: "search, common word, one chat",
    runs: 10,
    call: (s, _n, k) => s.search(OWNER, { query: COMMON, scope: "chat", chat_id: `chat${k % CHATS}`, limit: 20 }),
  },
  {
    name: "findByClientMsgId, a key in its chat",
    runs: 20,
    call: (s, n, k) => s.findByClientMsgId(OWNER, `chat${((k * 7919) % n) % CHATS}`, `key${(k * 7919) % n}`),
  },
];

const rows: string[] = [];
for (const size of sizes) {
  const native = await fill(size);
  const fallback = coreOnly(native);
  for (const c of CASES) {
    // Alternate, so load on the machine weighs on both alike.
    const a = await timed(c.runs, (k) => c.call(native, size, k));
    const b = await timed(c.runs, (k) => c.call(fallback, size, k));
    const a2 = await timed(c.runs, (k) => c.call(native, size, k));
    const b2 = await timed(c.runs, (k) => c.call(fallback, size, k));
    const p50 = (x: number, y: number) => +((x + y) / 2).toFixed(2);
    const nat = p50(a.p50, a2.p50);
    const fb = p50(b.p50, b2.p50);
    rows.push(
      `| ${size.toLocaleString("en")} | ${c.name} | ${nat} | ${fb} | ${Math.max(b.p99, b2.p99).toFixed(1)} | ${(fb / Math.max(nat, 0.001)).toFixed(1)}× |`,
    );
  }
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}, Node ${process.version}\n`,
);
console.log("| messages | call | native p50 ms | fallback p50 ms | fallback p99 ms | fallback ÷ native |");
console.log("| ---: | --- | ---: | ---: | ---: | ---: |");
for (const r of rows) console.log(r);
