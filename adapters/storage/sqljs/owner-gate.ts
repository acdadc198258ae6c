/** Expensive reads (history, outbox pages, searches) of one owner in flight at once, at most. */
export const READS_PER_OWNER = 4;

/**
 * Lets at most {@link READS_PER_OWNER} expensive reads of each owner go to the database process at
 * once; the others wait here, in order, as small requests. Together with the process's turns per
 * owner (fair-reads.ts) one owner's flood of `history`, `sync` and `search` frames costs the
 * others at most one read's wait, and holds at most this many replies of a page each in memory.
 */
export class OwnerGate {
  readonly #owners = new Map<string, { running: number; waiting: Array<() => void> }>();

  /** Runs `read` once fewer than {@link READS_PER_OWNER} of `owner`'s reads are in flight. */
  async run<T>(owner: string, read: () => Promise<T>): Promise<T> {
    let state = this.#owners.get(owner);
    if (!state) {
      state = { running: 0, waiting: [] };
      this.#owners.set(owner, state);
    }
    if (state.running >= READS_PER_OWNER) await new Promise<void>((resolve) => state.waiting.push(resolve));
    else state.running++;
    try {
      return await read();
    } finally {
      // A waiting read takes this one's place (running stays as it is) or the slot is freed.
      const next = state.waiting.shift();
      if (next) next();
      else if (--state.running === 0) this.#owners.delete(owner);
    }
  }
}
