/**
 * The Markdown tables of bench/routing.ts and bench/routing-churn.ts.
 * @module
 */
import type { RoutingResult, RoutingSetup } from "./routing.js";
import type { ChurnResult } from "./routing-churn.js";

const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

/** Markdown tables of both measurements. */
export function printRouting(setup: RoutingSetup, runs: RoutingResult[], churn: ChurnResult[]): void {
  console.log(
    `\n### Routing: ${setup.owners} owners × 2 devices over ${setup.processes} processes, one streamed answer each (${setup.questionChars}-character question)\n`,
  );
  console.log(
    "| channels | process | owners served | its share: messages / bytes | arrived from Redis: messages / bytes | arrived / share |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const run of runs) {
    for (const p of run.perProcess) {
      console.log(
        `| ${run.mode} | ${p.process} | ${p.ownersServed} | ${p.shareMessages} / ${kb(p.shareBytes)} | ${p.arrivedMessages} / ${kb(p.arrivedBytes)} | ${(p.arrivedMessages / p.shareMessages).toFixed(2)} / ${(p.arrivedBytes / p.shareBytes).toFixed(2)} |`,
      );
    }
  }
  console.log(
    "\n| channels | all messages / bytes through Redis | connect 2 devices per owner | turns | devices leave | bus commands on connect / leave |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const run of runs) {
    console.log(
      `| ${run.mode} | ${run.totalMessages} / ${kb(run.totalBytes)} | ${run.connectMs.toFixed(0)} ms | ${run.turnsMs.toFixed(0)} ms | ${run.disconnectMs.toFixed(0)} ms | ${run.connectCommands} / ${run.disconnectCommands} |`,
    );
  }
  const per = (calls: Record<string, number>, n: number) =>
    Object.entries(calls)
      .sort(([, a], [, b]) => b - a)
      .map(([method, count]) => `${method} ${(count / n).toFixed(2)}`)
      .join(", ");
  console.log("\n| channels | storage calls per device connect | storage calls per turn |");
  console.log("|---|---|---|");
  for (const run of runs)
    console.log(
      `| ${run.mode} | ${per(run.storageOnConnect, setup.owners * 2)} | ${per(run.storageOnTurns, setup.owners)} |`,
    );
  console.log("\n### Subscription churn on one process (owner channels)\n");
  console.log("| pattern | connect: until active | commands | disconnect: until done | commands |");
  console.log("|---|---|---|---|---|");
  for (const c of churn)
    console.log(
      `| ${c.pattern} | ${c.connectMs.toFixed(0)} ms | ${c.connectCommands} | ${c.disconnectMs.toFixed(0)} ms | ${c.disconnectCommands} |`,
    );
}
