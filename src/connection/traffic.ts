/**
 * What the connections of one gateway sent and received, for {@link Gateway.stats} and the metrics
 * of docs/PROTOCOL.md §18.3. Plain counters, so that counting costs one map update per frame; the
 * frame types are the protocol's (a frame is counted once validated), so the maps stay small.
 * @module
 */

/** Frames by type, and hellos by result, since the gateway was created. */
export class TrafficCounts {
  /** Client frames that passed validation, by type. */
  readonly received = new Map<string, number>();
  /** Text frames written to a socket, by type. */
  readonly sent = new Map<string, number>();
  hellosOk = 0;
  hellosRefused = 0;
  /** Connections turned away before they were taken ({@link Gateway.admitConnection}). */
  hellosShed = 0;
}

/** One more of `type`. */
export function countFrame(counts: Map<string, number>, type: string): void {
  counts.set(type, (counts.get(type) ?? 0) + 1);
}
