/**
 * The first writes after opening a large sql.js store, one at a time: how long `open()` takes and
 * the slowest of them. sql.js keeps the database file in one array sized exactly to the snapshot it
 * was opened from, and the first write that extends the file copies the whole array into a larger
 * one; the storage now does that at open (adapters/storage/sqljs/headroom.ts).
 *
 *   node --import tsx bench/sqljs-corpus-1m.ts /tmp/cg-corpus           # once: a million messages
 *   node --import tsx bench/sqljs-first-writes.ts /tmp/cg-corpus [writes=15000]
 *
 * The corpus folder is copied for the run (and the copy removed), so it stays as it was. Snapshots
 * are off for the run; the writes are 300-character messages, enough to use up the free pages the
 * corpus has and grow the file. Prints one JSON line.
 * @module
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";

const [corpus, writesArg = "15000"] = process.argv.slice(2);
if (!corpus) throw new Error("usage: bench/sqljs-first-writes.ts <corpus dir> [writes]");
const writes = Number(writesArg);
const dir = join(mkdtempSync(join(tmpdir(), "cg-first-writes-")), "db");
cpSync(corpus, dir, { recursive: true });
const storage = sqlJsStorage({ dir, snapshotIntervalMs: 0, snapshotMinBytes: 1e12, snapshotMaxBytes: 1e12 });
const load = loadavg()[0];
const opening = performance.now();
await storage.open();
const openMs = performance.now() - opening;
const times: number[] = [];
for (let i = 0; i < writes; i++) {
  const started = performance.now();
  const text = `${"lorem ipsum dolor sit amet ".repeat(11)}${i}`;
  await storage.commit("bench", {
    messages: [
      {
        message_id: `w${i}`,
        role: "user",
        text,
        reasoning: "",
        ts: Date.now(),
        media: [],
        chat_id: "c1",
        thread_id: null,
      },
    ],
  });
  times.push(performance.now() - started);
}
const sorted = [...times].sort((a, b) => a - b);
const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
console.log(
  JSON.stringify({
    load,
    openMs: Math.round(openMs),
    p50: at(0.5),
    p99: at(0.99),
    maxMs: Math.round(sorted.at(-1)!),
    slowest: times.indexOf(sorted.at(-1)!),
    over100ms: times.filter((t) => t > 100).length,
  }),
);
await storage.close();
rmSync(dir, { recursive: true, force: true });
