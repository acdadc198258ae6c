/**
 * Shedding hellos (docs/PROTOCOL.md §18.5): a process-wide cap on hellos in progress. Past it a
 * new connection's first frame is refused at once with close 1013 and a retry hint, instead of
 * queueing behind the others until the hello deadline closes it, while every queued hello holds
 * the event loop from the connections that are already in.
 * @module
 */

/** The close reason of a shed hello: `retry_after_ms=` and the hint (docs/PROTOCOL.md §18.5). */
export function retryReason(ms: number): string {
  return `retry_after_ms=${ms}`;
}

/** The hint never promises less than this: a device that came back sooner would be shed again. */
const MIN_HINT_MS = 250;
/** Nor more than this: a storm the process cannot measure well still ends. */
const MAX_HINT_MS = 30_000;
/** Hellos a second assumed before the process has finished any (and its floor after). */
const MIN_RATE = 50;

/**
 * Counts the hellos in progress and hands out retry hints as places in a virtual queue: each
 * refused device is told to come back one hello-time after the one refused before it, a hello-time
 * being what the process managed in the last whole second. So a storm comes back spread at the
 * rate the process can take it rather than all together again.
 */
export class HelloGate {
  #inFlight = 0;
  /** When the last refused device was told to come back (ms, the clock of `now`). */
  #nextSlot = 0;
  #second = 0;
  #doneThisSecond = 0;
  #doneLastSecond = 0;

  constructor(
    private readonly max: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Hellos being handled now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Counts one more hello in progress, or says false when the cap is reached (then shed it). */
  tryEnter(): boolean {
    if (this.#inFlight >= this.max) return false;
    this.#inFlight++;
    return true;
  }

  /** A hello counted by {@link tryEnter} ended, whatever its outcome. */
  leave(): void {
    this.#inFlight--;
    this.#tick();
    this.#doneThisSecond++;
  }

  /** Milliseconds a refused device should wait before it tries again. */
  retryAfterMs(): number {
    this.#tick();
    const now = this.now();
    const rate = Math.max(MIN_RATE, this.#doneLastSecond, this.#doneThisSecond);
    this.#nextSlot = Math.min(now + MAX_HINT_MS, Math.max(now + MIN_HINT_MS, this.#nextSlot + 1000 / rate));
    return Math.round(this.#nextSlot - now);
  }

  #tick(): void {
    const second = Math.floor(this.now() / 1000);
    if (second === this.#second) return;
    this.#doneLastSecond = second === this.#second + 1 ? this.#doneThisSecond : 0;
    this.#doneThisSecond = 0;
    this.#second = second;
  }
}
