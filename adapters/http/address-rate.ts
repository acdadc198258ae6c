/**
 * A budget of requests per client address and window, for endpoints that need no account to call
 * (logout): past it the address is answered 429 until its window ends.
 * @module
 */

interface Window {
  /** Start of the window, ms. */
  start: number;
  count: number;
}

/** Counts requests per address in fixed windows; times come from the caller, in milliseconds. */
export class AddressRate {
  readonly #windows = new Map<string, Window>();
  readonly #max: number;
  readonly #windowMs: number;

  constructor(max: number, windowSeconds: number) {
    this.#max = max;
    this.#windowMs = windowSeconds * 1000;
  }

  /** Counts one request of `address`; undefined when within budget, else whole seconds to wait. */
  take(address: string, now: number): number | undefined {
    let window = this.#windows.get(address);
    if (window === undefined || now - window.start >= this.#windowMs) {
      window = { start: now, count: 0 };
      this.#windows.set(address, window);
    }
    if (window.count >= this.#max) return Math.max(1, Math.ceil((window.start + this.#windowMs - now) / 1000));
    window.count++;
    return undefined;
  }

  /** Whole seconds `address` must wait when its budget is spent, else undefined; counts nothing. */
  wait(address: string, now: number): number | undefined {
    const window = this.#windows.get(address);
    if (window === undefined || now - window.start >= this.#windowMs || window.count < this.#max) return undefined;
    return Math.max(1, Math.ceil((window.start + this.#windowMs - now) / 1000));
  }

  /** Forgets windows that ended; keeps memory bounded under a scan of many addresses. */
  sweep(now: number): void {
    for (const [address, window] of this.#windows)
      if (now - window.start >= this.#windowMs) this.#windows.delete(address);
  }
}
