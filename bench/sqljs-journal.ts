/**
 * The sql.js storage's journal alone: how long a record takes to be on disk with 16 writers, when
 * the journal writes through libuv's thread pool (the storage in the serving process) and when it
 * writes on its own thread (`blocking`, the database process). `--hogs=N` starts N busy processes
 * beside it, as a serving process and clients do on a small machine. Modes alternate, twice each.
 *
 *   node --import tsx bench/sqljs-journal.ts [--hogs=2] [--seconds=3] [--paceMs=15]
 *
 * Each writer appends a 600-byte record and waits for it; with `--paceMs` it then waits that long
 * before its next record (people and models send at their pace), else it appends again at once.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { JournalWriter, encodeRecord } from "../adapters/storage/sqljs/journal.js";
import { percentiles } from "./corpus.js";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const hogs = Number(args.hogs ?? 0);
const seconds = Number(args.seconds ?? 3);
const writers = 16;
// Beside the bench's other files' folder rather than tmpfs, where an fsync costs nothing.
const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "cg-journal-"));
const record = encodeRecord("x".repeat(600));

async function run(blocking: boolean, paceMs: number) {
  const journal = new JournalWriter(dir, { blocking });
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await journal.append(1, record);
        latencies.push(performance.now() - t);
        if (paceMs) await new Promise((r) => setTimeout(r, paceMs));
      }
    }),
  );
  await journal.close();
  return { mode: blocking ? "blocking" : "thread pool", paceMs, records: latencies.length, ...percentiles(latencies) };
}

const busy = Array.from({ length: hogs }, () => spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
console.log(JSON.stringify({ loadAverageBefore: loadavg().map((l) => +l.toFixed(2)), hogs, dir }));
try {
  for (let round = 0; round < 2; round++) {
    for (const blocking of [false, true]) {
      for (const pace of [0, Number(args.paceMs ?? 15)]) console.log(JSON.stringify(await run(blocking, pace)));
    }
  }
} finally {
  for (const child of busy) child.kill();
  rmSync(dir, { recursive: true, force: true });
}
