/**
 * What bench/media.ts and its gateway child (bench/media-server.ts) share: the file size and the
 * messages between the two processes.
 * @module
 */

export const MiB = 1024 * 1024;
const mibArg = process.argv.find((a) => a.startsWith("--mib="));
/** The file size: 50 MiB, or `--mib=N` (1 to 1024); the child is started with the same argument. */
export const FILE_BYTES = (mibArg ? Math.max(1, Math.min(1024, Math.floor(Number(mibArg.slice(6))) || 50)) : 50) * MiB;

export type ToServer = { kind: "measure-start" } | { kind: "measure-stop" } | { kind: "exit" };

/** What the gateway measured between `measure-start` and `measure-stop`. */
export interface ServerStats {
  kind: "stats";
  baselineRss: number;
  peakRss: number;
  /** Largest growth of Buffer/ArrayBuffer memory over its value at the baseline. */
  peakArrayBuffersGrowth: number;
  /** Most bytes the ws server had received but the media store had not yet written. */
  peakQueuedBytes: number;
  samples: number;
  loopP99Ms: number;
  loopMaxMs: number;
  cpuMs: number;
}

export type FromServer = { kind: "ready"; port: number } | { kind: "started"; baselineRss: number } | ServerStats;
