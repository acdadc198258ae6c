/**
 * Runs the benchmarks, each in its own child process, one after another: `npm run bench`.
 *
 *   npm run bench                      # every bench
 *   npm run bench -- fanout            # just one (several names run those, in the order given)
 *   npm run bench -- --quick           # shorter runs, passed on to every bench
 *
 * Each bench prints its own summary (a Markdown table); this runner adds an overview of exit
 * codes and wall times at the end and exits non-zero when any bench failed.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
/** A bench may run at most this long before it is stopped and counted as failed. */
const BENCH_TIMEOUT_MS = 20 * 60_000;

/** Name on the command line → file in bench/. Benches whose file does not exist are skipped. */
const BENCHES: Array<{ name: string; aliases: string[]; file: string }> = [
  { name: "login", aliases: [], file: "login.ts" },
  { name: "fanout", aliases: ["fan-out"], file: "fanout.ts" },
  { name: "fanout-stream", aliases: ["delta", "stream"], file: "fanout-stream.ts" },
  { name: "media", aliases: [], file: "media.ts" },
  { name: "storage", aliases: ["storage-sqljs", "sqljs"], file: "storage-sqljs.ts" },
  { name: "search", aliases: ["fts"], file: "search.ts" },
  { name: "journal", aliases: ["sqljs-journal"], file: "sqljs-journal.ts" },
  { name: "multiprocess", aliases: ["multi-process", "postgres", "redis"], file: "multiprocess.ts" },
  { name: "fallbacks", aliases: ["storage-fallbacks"], file: "storage-fallbacks.ts" },
  { name: "capacity", aliases: ["storm", "reconnect"], file: "capacity.ts" },
  { name: "read-state", aliases: ["read", "unread", "push-decision"], file: "read-state.ts" },
  { name: "doors", aliases: ["door", "first-token"], file: "doors.ts" },
  { name: "door-load", aliases: ["door-memory", "door-cpu"], file: "door-load.ts" },
];

interface Outcome {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  seconds: number;
}

function runOne(name: string, file: string, passOn: string[]): Promise<Outcome> {
  const started = performance.now();
  console.log(`\n## ${name}: node --import tsx bench/${file}${passOn.length ? ` ${passOn.join(" ")}` : ""}\n`);
  const child = spawn(process.execPath, ["--import", "tsx", path.join(here, file), ...passOn], { stdio: "inherit" });
  const timer = setTimeout(() => {
    console.error(`bench ${name}: still running after ${BENCH_TIMEOUT_MS / 60_000} minutes; stopping it`);
    child.kill("SIGTERM");
  }, BENCH_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.on("error", (error) => {
      console.error(`bench ${name}: ${error.message}`);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ name, code, signal, seconds: (performance.now() - started) / 1000 });
    });
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const passOn = args.filter((a) => a.startsWith("-"));
  const names = args.filter((a) => !a.startsWith("-"));
  const available = BENCHES.filter((b) => existsSync(path.join(here, b.file)));
  let selected = available;
  if (names.length > 0) {
    selected = [];
    for (const wanted of names) {
      const bench = available.find(
        (b) => b.name === wanted || b.aliases.includes(wanted) || b.file === wanted || b.file === `${wanted}.ts`,
      );
      if (!bench) {
        console.error(`unknown bench "${wanted}"; available: ${available.map((b) => b.name).join(", ")}`);
        return 2;
      }
      selected.push(bench);
    }
  }
  const outcomes: Outcome[] = [];
  for (const bench of selected) outcomes.push(await runOne(bench.name, bench.file, passOn));

  console.log("\n## Overview\n");
  console.log("| bench | result | wall time |");
  console.log("|---|---|---|");
  for (const o of outcomes) {
    const result = o.code === 0 ? "ok" : o.signal ? `stopped (${o.signal})` : `failed (exit ${o.code})`;
    console.log(`| ${o.name} | ${result} | ${o.seconds.toFixed(1)} s |`);
  }
  return outcomes.every((o) => o.code === 0) ? 0 : 1;
}

process.exitCode = await main();
