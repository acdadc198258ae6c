/**
 * What bench/capacity.ts measured, per run and side, and how it prints: the table, the ratios of
 * the targets (gateway against bare), and the raw results as JSON.
 * @module
 */
import type { Side } from "./capacity-server.js";

export interface Memory {
  rss: number;
  heap: number;
  /** The young generation's size when loaded (bytes; in the RSS, not in the heap's used bytes). */
  newSpace?: number;
}

export interface RunResult {
  side: Side;
  load: string;
  memory: Memory;
  hellosPerSecond: number;
  helloRetries: number;
  /** CPU µs per hello of the server and its children (the gateway's database process), and of the devices' process. */
  serverCpuPerHello: number;
  devicesCpuPerHello: number;
  /** Of serverCpuPerHello, the part of the server's children. */
  childrenCpuPerHello: number;
  stormMs: number;
  stormRetries: number;
  /** CPU µs per device of the restarted server and its children over the storm. */
  stormCpuPerDevice: number;
  pingP50: number;
  pingP99: number;
  pingMax: number;
  pings: number;
}

export function printTable(results: RunResult[], devices: number, sides: readonly Side[]): void {
  const kb = (b: number) => (b / 1024).toFixed(1);
  console.log(`\n${devices} devices; Node ${process.version}\n`);
  console.log(
    "| side | load average (1/5/15) | RSS per connection | heap per connection | hellos/s (shed, retried) | CPU per hello: server (its children) / devices | storm: all back (server CPU per device) | reconnect retries | probe ping p50 / p99 / max (pings) |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    console.log(
      `| ${r.side} | ${r.load} | ${kb(r.memory.rss)} kB | ${kb(r.memory.heap)} kB | ${Math.round(r.hellosPerSecond)} (${r.helloRetries}) | ${Math.round(r.serverCpuPerHello)} (${Math.round(r.childrenCpuPerHello)}) / ${Math.round(r.devicesCpuPerHello)} µs | ${(r.stormMs / 1000).toFixed(2)} s (${Math.round(r.stormCpuPerDevice)} µs) | ${r.stormRetries} | ${r.pingP50.toFixed(1)} / ${r.pingP99.toFixed(1)} / ${r.pingMax.toFixed(1)} ms (${r.pings}) |`,
    );
  }
  if (sides.length === 2) printRatios(results);
  console.log(`\n\`\`\`json\n${JSON.stringify(results)}\n\`\`\``);
}

/** The targets' ratios, gateway against bare, from the medians of the runs (both sides needed). */
function printRatios(results: RunResult[]): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const of = (side: Side, f: (r: RunResult) => number) => median(results.filter((r) => r.side === side).map(f));
  console.log("\nRatios, gateway against bare (medians of the runs):\n");
  console.log(
    `- RSS per connection: ${(of("gateway", (r) => r.memory.rss) / of("bare", (r) => r.memory.rss)).toFixed(2)}x (target at most 1.5x)`,
  );
  console.log(
    `- hello rate: ${(of("gateway", (r) => r.hellosPerSecond) / of("bare", (r) => r.hellosPerSecond)).toFixed(2)}x (target at least 0.6x)`,
  );
  console.log(
    `- server CPU per hello (the gateway with its database process): ${(of("gateway", (r) => r.serverCpuPerHello) / of("bare", (r) => r.serverCpuPerHello)).toFixed(2)}x; the devices' own: ${of("bare", (r) => r.devicesCpuPerHello).toFixed(0)} µs (bare), ${of("gateway", (r) => r.devicesCpuPerHello).toFixed(0)} µs (gateway)`,
  );
  console.log(
    `- storm time: ${(of("gateway", (r) => r.stormMs) / of("bare", (r) => r.stormMs)).toFixed(2)}x (target at most 2x), probe ping p99 ${of("gateway", (r) => r.pingP99).toFixed(1)} ms (target under 50 ms)`,
  );
}
