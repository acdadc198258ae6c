import { LOGIN_LIMITS } from "./limits.js";

/** The verdict of {@link LoginLockout.check}. */
export type LockoutCheck = { locked: false } | { locked: true; /** whole seconds until it lifts */ retryAfter: number };

interface Entry {
  /** Times of failures within the window, ms. */
  failures: number[];
  /** End of the lockout, ms; 0 when not locked. */
  lockedUntil: number;
  /** Logins of this IP still being checked. */
  inFlight: number;
}

/**
 * The failed-login lockout of the seed, per client IP: 10 failures within 300 s lock the IP for
 * 900 s and clear its list; a success clears its failures; the lockout lifts when its time has
 * passed. Attempts during a lockout neither count nor extend it. All times come from the caller
 * (milliseconds), so tests drive it with their own clock.
 */
export class LoginLockout {
  readonly #entries = new Map<string, Entry>();
  readonly #max = LOGIN_LIMITS.maxFailures;
  readonly #windowMs = LOGIN_LIMITS.failureWindowSeconds * 1000;
  readonly #lockMs = LOGIN_LIMITS.lockoutSeconds * 1000;

  #entry(ip: string): Entry {
    let entry = this.#entries.get(ip);
    if (entry === undefined) this.#entries.set(ip, (entry = { failures: [], lockedUntil: 0, inFlight: 0 }));
    return entry;
  }

  #prune(entry: Entry, now: number): void {
    if (entry.lockedUntil !== 0 && entry.lockedUntil <= now) entry.lockedUntil = 0;
    while (entry.failures.length > 0 && now - entry.failures[0]! > this.#windowMs) entry.failures.shift();
  }

  /** Whether `ip` is locked out at `now`. */
  check(ip: string, now: number): LockoutCheck {
    const entry = this.#entries.get(ip);
    if (entry === undefined) return { locked: false };
    this.#prune(entry, now);
    if (entry.lockedUntil === 0) return { locked: false };
    return { locked: true, retryAfter: Math.max(1, Math.ceil((entry.lockedUntil - now) / 1000)) };
  }

  /**
   * Registers a login of `ip` about to be checked; false when its failures so far plus the logins
   * already in flight reach the limit, so that parallel guesses cannot outrun the lockout.
   */
  begin(ip: string, now: number): boolean {
    const entry = this.#entry(ip);
    this.#prune(entry, now);
    if (entry.failures.length + entry.inFlight >= this.#max) return false;
    entry.inFlight++;
    return true;
  }

  /** Ends what {@link LoginLockout.begin} started, before recording its outcome. */
  end(ip: string): void {
    const entry = this.#entries.get(ip);
    if (entry !== undefined && entry.inFlight > 0) entry.inFlight--;
  }

  /** Records a failure; true when it started a lockout. */
  fail(ip: string, now: number): boolean {
    const entry = this.#entry(ip);
    this.#prune(entry, now);
    if (entry.lockedUntil !== 0) return false;
    entry.failures.push(now);
    if (entry.failures.length < this.#max) return false;
    entry.failures = [];
    entry.lockedUntil = now + this.#lockMs;
    return true;
  }

  /** A success clears the failures of `ip` (a running lockout stays). */
  succeed(ip: string): void {
    const entry = this.#entries.get(ip);
    if (entry !== undefined) entry.failures = [];
  }

  /** Forgets IPs with nothing left to remember; keeps memory bounded under a scan of many IPs. */
  sweep(now: number): void {
    for (const [ip, entry] of this.#entries) {
      this.#prune(entry, now);
      if (entry.failures.length === 0 && entry.lockedUntil === 0 && entry.inFlight === 0) this.#entries.delete(ip);
    }
  }

  /** IPs currently remembered. */
  get size(): number {
    return this.#entries.size;
  }
}
