/**
 * The reads of the database process, taken in turns per owner. sql.js runs one statement at a
 * time on one thread, so reads taken in arrival order let one owner's burst of expensive reads
 * (searches over long messages, history pages) hold every other owner's reads behind all of it.
 * Here each owner has a queue, and the owners with reads waiting take one read each in turn: a
 * read of another owner waits for at most the one read already running, whatever one owner has
 * queued (docs/PROTOCOL.md §5).
 *
 * A read starts on its own turn of the event loop, so requests that arrived meanwhile are queued
 * before the next one is picked. Only the synchronous part (the SQL) takes turns; a read that
 * then waits for the journal to be durable no longer holds anyone up.
 */
export class FairReads {
  /** Owners with reads waiting, in the order they take their turn. */
  readonly #waiting = new Map<string, Array<() => void>>();
  /** The owner served last, put back behind those that arrived while its read ran. */
  #served: [string, Array<() => void>] | undefined;
  #scheduled = false;

  /** Runs `read` on `owner`'s next turn; settles as it does. */
  run<T>(owner: string, read: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => void read().then(resolve, reject);
      const queue = this.#waiting.get(owner) ?? (this.#served?.[0] === owner ? this.#served[1] : undefined);
      if (queue) queue.push(start);
      else this.#waiting.set(owner, [start]);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#next());
  }

  #next(): void {
    this.#scheduled = false;
    const served = this.#served;
    this.#served = undefined;
    if (served && served[1].length > 0) this.#waiting.set(served[0], served[1]);
    const first = this.#waiting.entries().next();
    if (first.done) return;
    const [owner, queue] = first.value;
    this.#waiting.delete(owner);
    this.#served = [owner, queue];
    queue.shift()!();
    this.#schedule();
  }
}
