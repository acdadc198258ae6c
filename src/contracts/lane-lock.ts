/**
 * The `LaneLock` contract: one turn at a time per lane across gateway processes.
 * @module
 */

/** A held lane. */
export interface LaneLease {
  /** Give the lane up. Idempotent. */
  release(): Promise<void>;
  /**
   * Aborted when the lock finds the lease gone while it is held (it expired, say after the process
   * was paused longer than its lifetime, or the lock's server lost it): the gateway then ends the
   * lane's turn at once. The storage's lane token (docs/PROTOCOL.md §4.2) is what keeps a holder
   * that has not noticed yet from writing; this only makes it stop sooner. Absent: never lost.
   */
  readonly lost?: AbortSignal;
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

/**
 * The in-process lane lock: one holder per key within this process, waiters served in the order
 * they asked. The gateway needs no lock to serialise a lane within one process; this is the
 * reference implementation of the contract (what `chat-gateway/testing` checks a shared lock
 * against) and a lock for several gateways in one process that share one storage.
 */
export function memoryLaneLock(): LaneLock {
  const waiting = new Map<string, Array<() => void>>();

  function handOver(key: string): void {
    const queue = waiting.get(key)!;
    const next = queue.shift();
    if (next) next();
    else waiting.delete(key);
  }

  return {
    acquire(key, signal) {
      return new Promise<LaneLease>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        let released = false;
        const lease: LaneLease = {
          async release() {
            if (released) return;
            released = true;
            handOver(key);
          },
        };
        const queue = waiting.get(key);
        if (queue === undefined) {
          waiting.set(key, []);
          return resolve(lease);
        }
        const take = () => {
          signal.removeEventListener("abort", abort);
          resolve(lease);
        };
        const abort = () => {
          queue.splice(queue.indexOf(take), 1);
          reject(signal.reason);
        };
        queue.push(take);
        signal.addEventListener("abort", abort, { once: true });
      });
    },
  };
}
