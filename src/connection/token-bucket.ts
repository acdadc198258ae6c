/**
 * A token bucket: the per-connection frame-rate budget (docs/PROTOCOL.md §2.4).
 * @module
 */

/** Refills continuously; `take()` is false when the frame must be refused. */
import type { RateLimit } from "../options/options.js";
export type { RateLimit } from "../options/options.js";
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

  take(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
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
