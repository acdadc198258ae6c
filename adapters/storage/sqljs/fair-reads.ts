/**
 * The reads of the database process, taken in turns per owner. sql.js runs one statement at a
 * time on one thread, so reads taken in arrival order let one owner's burst of expensive reads
 * (searches over long messages, history pages) hold every other owner's reads behind all of it.
 * Here each owner has a queue, and the owners with reads waiting take one read each per round, a
 * round per turn of the event loop: a read of another owner waits for about one read of each
 * owner, whatever one owner has queued (docs/PROTOCOL.md §5).
 *
 * Requests that arrive during a round are queued for the next one. Only the synchronous part (the
 * SQL) takes turns; a read that then waits for the journal to be durable holds nobody up.
 */
export class FairReads {
  /** Owners with reads waiting, in the order they take their turn. */
  readonly #waiting = new Map<string, Array<() => void>>();
  #scheduled = false;

  /** Runs `read` on `owner`'s next turn; settles as it does. */
  run<T>(owner: string, read: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => void read().then(resolve, reject);
      const queue = this.#waiting.get(owner);
      if (queue) queue.push(start);
      else this.#waiting.set(owner, [start]);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#round());
  }

  /**
   * One read of every owner with reads waiting. Their replies leave together at the end of the
   * turn, as before this queue, and an owner that arrived meanwhile is in the very next round.
   */
  #round(): void {
    this.#scheduled = false;
    const round = [...this.#waiting];
    this.#waiting.clear();
    for (const [owner, queue] of round) {
      queue.shift()!();
      if (queue.length > 0) this.#waiting.set(owner, queue);
    }
    if (this.#waiting.size > 0) this.#schedule();
  }
}
