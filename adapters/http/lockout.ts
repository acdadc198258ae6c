import { LOGIN_LIMITS } from "./limits.js";

/** The verdict of a lockout check: whether the IP is locked, and for how long. */
export type LockoutCheck = { locked: false } | { locked: true /** whole seconds until it lifts */; retryAfter: number };

interface Entry {
  /** Times of failures within the window, ms. */
  failures: number[];
  /** End of the lockout, ms; 0 when not locked. */
  lockedUntil: number;
  /** Logins of this IP still being checked. */
  inFlight: number;
  /** Logins waiting for one of those to finish. */
  waiters: Array<() => void>;
}

/**
 * The failed-login lockout (docs/PROTOCOL.md §9.6), per client IP: 10 failures within 300 s lock the IP for
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
    if (entry === undefined) {
      entry = { failures: [], lockedUntil: 0, inFlight: 0, waiters: [] };
      this.#entries.set(ip, entry);
    }
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
   * already in flight reach the limit. The caller then waits with {@link LoginLockout.settled} and
   * asks again, so parallel attempts are judged as if they came one after another and cannot
   * outrun the lockout. `sharedFailures`: the count a {@link LockoutStore} holds, used instead of
   * this process's own.
   */
  begin(ip: string, now: number, sharedFailures?: number): boolean {
    const entry = this.#entry(ip);
    this.#prune(entry, now);
    // With a LockoutStore the failures are counted there, by every process.
    if ((sharedFailures ?? entry.failures.length) + entry.inFlight >= this.#max) return false;
    entry.inFlight++;
    return true;
  }

  /**
   * Ends what {@link LoginLockout.begin} started, after recording its outcome with
   * {@link LoginLockout.fail} or {@link LoginLockout.succeed}; wakes the waiting logins of `ip`
   * (all of them: the outcome may have locked the IP, and each must learn it).
   */
  end(ip: string): void {
    const entry = this.#entries.get(ip);
    if (entry === undefined) return;
    if (entry.inFlight > 0) entry.inFlight--;
    const waiters = entry.waiters.splice(0);
    for (const wake of waiters) wake();
  }

  /** Resolves when a login of `ip` in flight ends. */
  settled(ip: string): Promise<void> {
    return new Promise((resolve) => this.#entry(ip).waiters.push(resolve));
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

  /** Failures of `ip` within the window at `now`. */
  failures(ip: string, now: number): number {
    const entry = this.#entries.get(ip);
    if (entry === undefined) return 0;
    this.#prune(entry, now);
    return entry.failures.length;
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
      if (entry.failures.length === 0 && entry.lockedUntil === 0 && entry.inFlight === 0 && entry.waiters.length === 0)
        this.#entries.delete(ip);
    }
  }

  /** IPs currently remembered. */
  get size(): number {
    return this.#entries.size;
  }
}

/** The verdict of {@link LockoutStore.check}: the lockout, and the failures counted so far. */
export type SharedLockoutCheck = LockoutCheck & { failures: number };

/**
 * Where failure counts and lockouts live when several processes must share them (an attacker must
 * not escape the 10-per-IP rule by spreading attempts over processes). The rule is the one of
 * login protection: 10 failures within 300 s lock the IP for 900 s and clear its failures; a
 * success clears the failures; attempts during a lockout neither count nor extend it. Times are
 * the caller's, in milliseconds. Each method must be atomic against the others for one IP.
 *
 * Logins still in flight are counted per process by the login protection, which asks the store for
 * the failures so far. `chat-gateway/redis` has a Redis implementation.
 */
export interface LockoutStore {
  /** Whether `ip` is locked out at `now`, and its failures within the window. */
  check(ip: string, now: number): Promise<SharedLockoutCheck>;
  /** Records a failure; true when it started a lockout. */
  fail(ip: string, now: number): Promise<boolean>;
  /** A success clears the failures of `ip` (a running lockout stays). */
  succeed(ip: string): Promise<void>;
}

/** A {@link LockoutStore} in this process's memory: the reference implementation, for tests. */
export function memoryLockoutStore(): LockoutStore {
  const lockout = new LoginLockout();
  return {
    async check(ip, now) {
      return { ...lockout.check(ip, now), failures: lockout.failures(ip, now) };
    },
    async fail(ip, now) {
      return lockout.fail(ip, now);
    },
    async succeed(ip) {
      lockout.succeed(ip);
    },
  };
}
