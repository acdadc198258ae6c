/**
 * Rate budgets shared by the connections of one key (a client address, an owner) in this process,
 * so closing a connection and opening another does not refill them (docs/PROTOCOL.md §2.4).
 * @module
 */
import { TokenBucket, type RateLimit } from "./token-bucket.js";

/** Keys held before the full buckets are forgotten (a full bucket is the same as a new one). */
const SWEEP_AT = 4_096;

/** One token bucket per key, made on first use and forgotten once it has refilled. */
export class KeyedBuckets {
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #limit: RateLimit;
  readonly #now: () => number;
  #sweepAt = SWEEP_AT;

  constructor(limit: RateLimit, now: () => number = Date.now) {
    this.#limit = limit;
    this.#now = now;
  }

  /** Takes `cost` tokens of `key`'s bucket (see {@link TokenBucket.take}); false means refuse. */
  take(key: string, cost = 1): boolean {
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#sweepAt) this.#sweep();
      bucket = new TokenBucket(this.#limit, this.#now);
      this.#buckets.set(key, bucket);
    }
    return bucket.take(cost);
  }

  /** Forgets the buckets that are full again; the next sweep waits until the map doubled, so sweeping stays linear. */
  #sweep(): void {
    for (const [key, bucket] of this.#buckets) if (bucket.full()) this.#buckets.delete(key);
    this.#sweepAt = Math.max(SWEEP_AT, this.#buckets.size * 2);
  }
}

/** The budgets of docs/PROTOCOL.md §2.4 that connections share: frames per address and per owner, new connections per address. */
export interface SharedBudgets {
  readonly framesPerAddress: KeyedBuckets;
  readonly framesPerOwner: KeyedBuckets;
  readonly connectsPerAddress: KeyedBuckets;
}

/** The shared budgets of one gateway process. */
export function sharedBudgets(o: {
  rateLimitPerAddress: RateLimit;
  rateLimitPerOwner: RateLimit;
  connectRateLimit: RateLimit;
  now: () => number;
}): SharedBudgets {
  return {
    framesPerAddress: new KeyedBuckets(o.rateLimitPerAddress, o.now),
    framesPerOwner: new KeyedBuckets(o.rateLimitPerOwner, o.now),
    connectsPerAddress: new KeyedBuckets(o.connectRateLimit, o.now),
  };
}
