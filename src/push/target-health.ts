/**
 * Push targets that keep failing (docs/PROTOCOL.md §6): a target whose pushes fail is rested
 * for a while that doubles with each failed push, and dropped after a few in a row, so that an
 * endpoint that never answers, or answers slowly, stops costing the gateway a request per push.
 * @module
 */

/** How failing targets are rested and dropped. */
export const TARGET_BACKOFF = {
  /** The rest after the first failed push, ms; it doubles with each further one. */
  firstMs: 60_000,
  /** The longest rest, ms. */
  maxMs: 3_600_000,
  /** Failed pushes in a row after which a target is dropped from its device. */
  dropAfter: 5,
  /** Failing targets remembered by one process; the oldest is forgotten first. */
  kept: 10_000,
} as const;

interface Failing {
  failures: number;
  /** Epoch ms until which pushes to the target are skipped. */
  until: number;
}

/** The failing targets of one gateway process, by target key. */
export class TargetHealth {
  readonly #failing = new Map<string, Failing>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** True while the target rests after a failed push: a push to it now is skipped. */
  resting(key: string): boolean {
    const failing = this.#failing.get(key);
    return failing !== undefined && this.#now() < failing.until;
  }

  /** Record a push that failed for good; true when the target has failed often enough in a row to be dropped. */
  failed(key: string): boolean {
    const failures = (this.#failing.get(key)?.failures ?? 0) + 1;
    const restMs = Math.min(TARGET_BACKOFF.maxMs, TARGET_BACKOFF.firstMs * 2 ** (failures - 1));
    // Re-inserted so that the map's order is the order of the last failure.
    this.#failing.delete(key);
    this.#failing.set(key, { failures, until: this.#now() + restMs });
    if (this.#failing.size > TARGET_BACKOFF.kept) this.#failing.delete(this.#failing.keys().next().value as string);
    return failures >= TARGET_BACKOFF.dropAfter;
  }

  /** The target answered, or was dropped: it starts afresh. */
  clear(key: string): void {
    this.#failing.delete(key);
  }
}
