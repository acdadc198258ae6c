/**
 * A token bucket: the per-connection frame-rate budget (docs/PROTOCOL.md §2.4).
 * @module
 */

import type { RateLimit } from "../options/options.js";
export type { RateLimit } from "../options/options.js";

/** A frame of this many characters (or bytes, for a binary one) or more weighs one token more per this many. */
export const FRAME_COST_UNIT = 16 * 1024;

/**
 * The tokens a frame of `size` characters (bytes for binary) spends: one, and one more per full
 * {@link FRAME_COST_UNIT}. Parsing and checking a frame costs the event loop by its size: at one
 * token each, an owner's budget of 100 frames of 240 kB a second held the loop for more than a
 * second at a time from every other owner (docs/PROTOCOL.md §2.4).
 */
export function frameCost(size: number): number {
  return 1 + Math.floor(size / FRAME_COST_UNIT);
}

/** Refills continuously; `take()` is false when the frame must be refused. */
export class TokenBucket {
  #tokens: number;
  #last: number;
  readonly #limit: RateLimit;
  readonly #now: () => number;

  constructor(limit: RateLimit, now: () => number = Date.now) {
    this.#limit = limit;
    this.#now = now;
    this.#tokens = limit.burst;
    this.#last = now();
  }

  /**
   * Takes `cost` tokens (a large frame's weight, {@link frameCost}); never more than the burst, so
   * a frame the limit allows at all passes once the bucket is full.
   */
  take(cost = 1): boolean {
    this.#refill();
    const tokens = Math.min(cost, this.#limit.burst);
    if (this.#tokens < tokens) return false;
    this.#tokens -= tokens;
    return true;
  }

  /**
   * Takes `cost` tokens whether or not they are there, down to one burst in debt: a frame that a
   * connection's fair share of a shared budget allowed (docs/PROTOCOL.md §2.4) still counts, so
   * the others' frames past their share wait until the debt is earned back.
   */
  charge(cost = 1): void {
    this.#refill();
    const burst = this.#limit.burst;
    this.#tokens = Math.max(-burst, this.#tokens - Math.min(cost, burst));
  }

  /** True when the bucket holds its whole burst again, as a new one would. */
  full(): boolean {
    this.#refill();
    return this.#tokens >= this.#limit.burst;
  }

  #refill(): void {
    const now = this.#now();
    this.#tokens = Math.min(this.#limit.burst, this.#tokens + ((now - this.#last) / 1000) * this.#limit.perSecond);
    this.#last = now;
  }
}
