/**
 * Shedding hellos (docs/PROTOCOL.md §18.5): a process-wide cap on hellos in progress. Past it a
 * new connection's first frame is refused at once with close 1013 and a retry hint, instead of
 * queueing behind the others until the hello deadline closes it, while every queued hello holds
 * the event loop from the connections that are already in.
 * @module
 */

/** The close reason of a shed hello: `retry_after_ms=` and the hint (docs/PROTOCOL.md §18.5). */
export function retryReason(ms: number): string {
  return `retry_after_ms=${ms}`;
}

/** The hint never promises less than this: a device that came back sooner would be shed again. */
const MIN_HINT_MS = 200;
/** Nor more than this: a storm the process cannot measure well still ends. */
const MAX_HINT_MS = 30_000;
/** What a hello is assumed to take before the process has finished one (ms). */
const FIRST_GUESS_MS = 100;
/** Weight of the newest hello in the running mean of their durations. */
const WEIGHT = 1 / 32;

/**
 * Counts the hellos in progress and hands out retry hints as places in a virtual queue. While
 * hellos are shed the cap is full, so the process finishes `max` hellos per mean hello duration
 * (Little's law); each refused device is told to come back one such share after the one refused
 * before it. So a storm comes back spread at the rate the process can take it, not all at once
 * again, and the estimate follows the load within a few dozen hellos.
 */
export class HelloGate {
  #inFlight = 0;
  /** When the last refused device was told to come back (ms, `performance.now()` time). */
  #nextSlot = 0;
  /** Running mean of a hello's duration, from its first frame to its end (ms). */
  #meanMs = FIRST_GUESS_MS;

  constructor(private readonly max: number) {}

  /** Hellos being handled now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Counts one more hello in progress and returns when it started, for {@link leave}; undefined
   * when the cap is reached (then shed it).
   */
  tryEnter(): number | undefined {
    if (this.#inFlight >= this.max) return undefined;
    this.#inFlight++;
    return performance.now();
  }

  /** A hello counted by {@link tryEnter} at `since` ended, whatever its outcome. */
  leave(since: number): void {
    this.#inFlight--;
    this.#meanMs += (performance.now() - since - this.#meanMs) * WEIGHT;
  }

  /** Milliseconds a refused device should wait before it tries again. */
  retryAfterMs(): number {
    const now = performance.now();
    const share = this.#meanMs / this.max;
    this.#nextSlot = Math.min(now + MAX_HINT_MS, Math.max(now + MIN_HINT_MS, this.#nextSlot + share));
    return Math.round(this.#nextSlot - now);
  }
}
