/**
 * The `LaneLock` contract: one turn at a time per lane across gateway processes.
 * @module
 */

/** A held lane. */
export interface LaneLease {
  /** Give the lane up. Idempotent. */
  release(): Promise<void>;
}

/**
 * Serialises turns of one lane across processes. Within a process the gateway already runs a
 * lane's turns one at a time; a lock is only needed when several processes share one storage.
 *
 * Guarantees an implementation must give: at most one holder per key at a time; a lease whose
 * holder died (crashed process) expires after a bounded time, so no lane stays blocked forever;
 * a live holder keeps its lease for as long as it runs (renewing it as needed).
 */
export interface LaneLock {
  /** Wait until the lane is free, then hold it. Rejects if `signal` aborts first. */
  acquire(key: string, signal: AbortSignal): Promise<LaneLease>;
}
