/**
 * The calls to the database process that await their replies, by request id.
 *
 * Why not a `Map` of `{ resolve, reject }` literals: while thousands of devices say hello, a call
 * waits for its reply long enough to outlive a young-generation collection, so V8 learns that the
 * literal's objects live long and allocates every later one straight in the old generation
 * (allocation-site pretenuring). There each dies after its reply, and a full collection frees it
 * but keeps its page: free room the process holds on to. A `Map` that grows and shrinks with the
 * calls in flight likewise swaps its table for a new one each time, and the old tables, promoted
 * meanwhile, die in the old generation too. With these and the channel batch's entry per message
 * gone, the free room in the gateway's old generation after 15,000 hellos fell from about 26 MB to
 * 14 to 21 MB (bench/NOTES.md). Class instances are never pretenured, and the slots here are reused
 * rather than reallocated: ids are slot numbers, handed out again once their call is settled.
 * @module
 */

/** A call awaiting its reply. */
export class PendingCall {
  constructor(
    readonly resolve: (value: unknown) => void,
    readonly reject: (error: Error) => void,
  ) {}
}

export class PendingCalls {
  readonly #slots: Array<PendingCall | undefined> = [];
  /** Slots free for the next call, the last freed first. */
  readonly #free: number[] = [];
  #size = 0;

  /** Calls awaiting their replies. */
  get size(): number {
    return this.#size;
  }

  /** Registers `call`; returns its id, unique among the calls in flight. */
  add(call: PendingCall): number {
    const id = this.#free.pop() ?? this.#slots.length;
    this.#slots[id] = call;
    this.#size++;
    return id;
  }

  /** Removes and returns the call with `id`; undefined when none is in flight with it. */
  take(id: number): PendingCall | undefined {
    const call = this.#slots[id];
    if (call === undefined) return undefined;
    this.#slots[id] = undefined;
    this.#free.push(id);
    this.#size--;
    return call;
  }

  /**
   * Removes `call` when `id` still holds it; false when it was settled already (its id may then
   * belong to a later call, which stays).
   */
  remove(id: number, call: PendingCall): boolean {
    if (this.#slots[id] !== call) return false;
    this.take(id);
    return true;
  }

  /** Removes and returns every call in flight. */
  takeAll(): PendingCall[] {
    const calls = this.#slots.filter((call): call is PendingCall => call !== undefined);
    this.#slots.length = 0;
    this.#free.length = 0;
    this.#size = 0;
    return calls;
  }
}
