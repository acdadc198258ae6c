/**
 * Work that can run for long without real I/O (a turn's events from a fast runtime, a connection's
 * queue of flooded frames) hands the event loop back now and then, so that every other
 * connection's frames, timers and timeouts still run meanwhile.
 * @module
 */
import { setImmediate as nextMacrotask } from "node:timers/promises";

/**
 * How long one piece of work may hold the event loop before it yields. 10 ms keeps other
 * connections answered during a flood, yet lets a burst answer of a few thousand characters finish
 * in one slice (at 5 ms the fan-out bench lost a quarter of its speed).
 */
export const SHARE_EVERY_MS = 10;

/** Tracks how long the current stretch of work has held the event loop. */
export class LoopShare {
  #busySince = performance.now();

  /**
   * The next macrotask when this work has held the loop for {@link SHARE_EVERY_MS}, else
   * `undefined`: callers on a per-frame path pay no promise when no yield is due.
   */
  breathe(): Promise<void> | undefined {
    if (performance.now() - this.#busySince < SHARE_EVERY_MS) return undefined;
    return nextMacrotask().then(() => {
      this.#busySince = performance.now();
    });
  }
}
