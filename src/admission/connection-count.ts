/**
 * Open connections counted by a key (the client address), so one source cannot hold more than
 * its share of sockets.
 * @module
 */

/** Counts per key; a key with no connection left is forgotten, so the map never outgrows the open sockets. */
export class ConnectionCount {
  readonly #counts = new Map<string, number>();

  /** Count one more for `key` unless it already has `max`; false means refuse. */
  tryAdd(key: string, max: number): boolean {
    const count = this.#counts.get(key) ?? 0;
    if (count >= max) return false;
    this.#counts.set(key, count + 1);
    return true;
  }

  /** One connection of `key` ended. */
  release(key: string): void {
    const count = (this.#counts.get(key) ?? 0) - 1;
    if (count > 0) this.#counts.set(key, count);
    else this.#counts.delete(key);
  }
}
