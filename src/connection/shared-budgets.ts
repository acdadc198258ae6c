/**
 * Rate budgets shared by the connections of one key (a client address, an owner) in this process,
 * so closing a connection and opening another does not refill them (docs/PROTOCOL.md §2.4). A frame
 * budget is divided fairly among the connections that draw on it: one that floods spends its own
 * share and what the others leave, never theirs, so a looping app or a stolen token cannot get its
 * owner's other devices refused.
 * @module
 */
import { TokenBucket, type RateLimit } from "./token-bucket.js";

/** Keys held before the idle ones are forgotten (an idle one is the same as a new one). */
const SWEEP_AT = 4_096;

/** One value per key, made on first use; past a size, those that are as good as new are forgotten. */
class Keyed<T> {
  readonly #values = new Map<string, T>();
  readonly #make: () => T;
  readonly #idle: (value: T) => boolean;
  #sweepAt = SWEEP_AT;

  constructor(make: () => T, idle: (value: T) => boolean) {
    this.#make = make;
    this.#idle = idle;
  }

  get(key: string): T {
    let value = this.#values.get(key);
    if (value === undefined) {
      if (this.#values.size >= this.#sweepAt) this.#sweep();
      value = this.#make();
      this.#values.set(key, value);
    }
    return value;
  }

  /** Forgets `key` now if it still holds `value` and that is idle. */
  forget(key: string, value: T): void {
    if (this.#values.get(key) === value && this.#idle(value)) this.#values.delete(key);
  }

  /** Forgets the idle values; the next sweep waits until the map doubled, so sweeping stays linear. */
  #sweep(): void {
    for (const [key, value] of this.#values) if (this.#idle(value)) this.#values.delete(key);
    this.#sweepAt = Math.max(SWEEP_AT, this.#values.size * 2);
  }
}

/** One token bucket per key, made on first use and forgotten once it has refilled. */
export class KeyedBuckets {
  readonly #buckets: Keyed<TokenBucket>;

  constructor(limit: RateLimit, now: () => number = Date.now) {
    this.#buckets = new Keyed(
      () => new TokenBucket(limit, now),
      (bucket) => bucket.full(),
    );
  }

  /** Takes `cost` tokens of `key`'s bucket (see {@link TokenBucket.take}); false means refuse. */
  take(key: string, cost = 1): boolean {
    return this.#buckets.get(key).take(cost);
  }
}

/** One key's budget and the connections drawing on it. */
interface Pool {
  readonly bucket: TokenBucket;
  members: number;
}

/**
 * One connection's draw on a shared budget: its fair share, the budget's rate and burst divided
 * by the connections drawing on it, earned from when it joined (so reconnecting earns nothing).
 */
export class FairShare {
  readonly #pool: Pool;
  readonly #limit: RateLimit;
  readonly #now: () => number;
  readonly #leave: () => void;
  #tokens = 0;
  #last: number;
  #left = false;

  /** Made by {@link FairBuckets.join}. */
  constructor(pool: Pool, limit: RateLimit, now: () => number, leave: () => void) {
    this.#pool = pool;
    this.#limit = limit;
    this.#now = now;
    this.#leave = leave;
    this.#last = now();
  }

  /**
   * Takes `cost` tokens for one frame; false means refuse. A frame within the connection's share
   * always passes, and counts against the budget all the same (in debt, if the others spent it);
   * one past the share passes only on what the budget still holds.
   */
  take(cost = 1): boolean {
    const members = Math.max(1, this.#pool.members);
    const burst = this.#limit.burst / members;
    const now = this.#now();
    this.#tokens = Math.min(burst, this.#tokens + ((now - this.#last) / 1000) * (this.#limit.perSecond / members));
    this.#last = now;
    const own = Math.min(cost, burst);
    if (this.#tokens < own) return this.#pool.bucket.take(cost);
    this.#tokens -= own;
    this.#pool.bucket.charge(cost);
    return true;
  }

  /** The connection closed: the others' shares grow. Once only. */
  leave(): void {
    if (this.#left) return;
    this.#left = true;
    this.#pool.members--;
    this.#leave();
  }
}

/**
 * One frame budget per key, divided among the connections that joined it; a key with no
 * connection is forgotten once its bucket has refilled.
 */
export class FairBuckets {
  readonly #pools: Keyed<Pool>;
  readonly #limit: RateLimit;
  readonly #now: () => number;

  constructor(limit: RateLimit, now: () => number = Date.now) {
    this.#limit = limit;
    this.#now = now;
    this.#pools = new Keyed(
      () => ({ bucket: new TokenBucket(limit, now), members: 0 }),
      (pool) => pool.members === 0 && pool.bucket.full(),
    );
  }

  /** A connection starts drawing on `key`'s budget until it calls {@link FairShare.leave}. */
  join(key: string): FairShare {
    const pool = this.#pools.get(key);
    pool.members++;
    return new FairShare(pool, this.#limit, this.#now, () => this.#pools.forget(key, pool));
  }
}

/** The budgets of docs/PROTOCOL.md §2.4 that connections share: frames per address and per owner, new connections per address. */
export interface SharedBudgets {
  readonly framesPerAddress: FairBuckets;
  readonly framesPerOwner: FairBuckets;
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
    framesPerAddress: new FairBuckets(o.rateLimitPerAddress, o.now),
    framesPerOwner: new FairBuckets(o.rateLimitPerOwner, o.now),
    connectsPerAddress: new KeyedBuckets(o.connectRateLimit, o.now),
  };
}
