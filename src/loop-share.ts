/**
 * Work that can run for long without real I/O (a turn's events from a fast runtime, a connection's
 * queue of flooded frames) hands the event loop back now and then, so that every other
 * connection's frames, timers and timeouts still run meanwhile.
 * @module
 */
import { setImmediate as nextMacrotask } from "node:timers/promises";

/** How long one piece of work may hold the event loop before it yields. */
export const SHARE_EVERY_MS = 10;

/** Tracks how long the current stretch of work has held the event loop. */
export class LoopShare {
  #busySince = performance.now();

  /** Waits for the next macrotask when this work has held the loop for {@link SHARE_EVERY_MS}. */
  async breathe(): Promise<void> {
    if (performance.now() - this.#busySince < SHARE_EVERY_MS) return;
    await nextMacrotask();
    this.#busySince = performance.now();
  }
}
