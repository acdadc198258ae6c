/**
 * Shedding hellos (docs/PROTOCOL.md §18.5): a process-wide cap on hellos in progress. Past it a
 * new connection's first frame is refused at once with close 1013 and a retry hint, instead of
 * queueing behind the others until the hello deadline closes it, while every queued hello holds
 * the event loop from the connections that are already in. Before that, a transport's new
 * connections wait for room (`queue.ts`, {@link HelloGate.hasRoom}): the sockets taken
 * but not yet at their first frame count then too, so a storm's first wave waits before its
 * upgrade instead of being upgraded into a queue of hellos.
 * @module
 */
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { realClock, type Clock } from "../support/clock.js";
import { TUNING } from "./tuning.js";

/** The close reason of a shed hello: `retry_after_ms=` and the hint (docs/PROTOCOL.md §18.5). */
export function retryReason(ms: number): string {
  return `retry_after_ms=${ms}`;
}

const {
  minHintMs: { value: MIN_HINT_MS },
  maxHintMs: { value: MAX_HINT_MS },
  firstGuessMs: { value: FIRST_GUESS_MS },
  firstDurationMs: { value: FIRST_DURATION_MS },
  durationWeight: { value: DURATION_WEIGHT },
  windowMs: { value: WINDOW_MS },
  minUnits: { value: MIN_UNITS },
  openWeight: { value: OPEN_WEIGHT },
  shedWeight: { value: SHED_WEIGHT },
  arrivalWeight: { value: ARRIVAL_WEIGHT },
  upgradeShedWeight: { value: UPGRADE_SHED_WEIGHT },
  pendingMs: { value: PENDING_MS },
  bucketMs: { value: BUCKET_MS },
  waitingPerPlace: { value: WAITING_PER_PLACE },
  waitingHelloMaxChars: { value: WAITING_HELLO_MAX_CHARS },
  busy: { value: BUSY },
  costWeight: { value: WEIGHT },
} = TUNING;
/** The hello's share of a device's loop time, beside its open's. */
const HELLO_WEIGHT = 1 - OPEN_WEIGHT;
/** The pending connections are counted in this many buckets of {@link BUCKET_MS}. */
const PENDING_BUCKETS = PENDING_MS / BUCKET_MS;

/** A hello waiting for a place ({@link HelloGate.enter}). */
export interface HelloPlace {
  /** Resolves with when the hello entered (for {@link HelloGate.leave}) once a place is its. */
  readonly entered: Promise<number>;
  /** Its connection closed: it leaves the queue, or gives back the place it was given. */
  cancel(): void;
}

interface PlaceWaiter {
  readonly grant: (since: number) => void;
  since: number | undefined;
  cancelled: boolean;
}
/**
 * Counts the hellos in progress and hands out retry hints as places in a virtual queue. The
 * places are one device's event-loop time apart (the loop's busy time over a window divided by
 * the connections it opened and the hellos it finished and shed in it, weighted, as a running
 * mean), or, when hellos wait on something else (a slow authenticator or storage), `max` of them
 * per mean hello duration as Little's law has it, counting only the share of that duration the
 * loop was idle. The time a hello spends queued behind the others on a busy loop is its
 * neighbours' cost, not its own: counted in full, a storm's own queueing stretched the places out
 * to seconds, and the process sat idle after the storm while the devices it shed waited for their
 * turn. The clients' jitter (up to half the hint again) spreads the returns to about four fifths
 * of that rate, which leaves the loop a share for the connections that are already in.
 */
export class HelloGate {
  #inFlight = 0;
  /** When the last refused device was told to come back (ms, clock time). */
  #nextSlot = 0;
  /** Running mean of the event-loop time of one device: its upgrade and its hello (ms). */
  #costMs = FIRST_GUESS_MS;
  /** Running means of a hello's duration, from its first frame to its end (ms), and of the loop's idle share. */
  #durationMs = FIRST_DURATION_MS;
  #idle = 1;
  #windowStart: number;
  #loopAt: EventLoopUtilization = performance.eventLoopUtilization();
  /** Connections opened, hellos that ended and sheds (weighted) in the current window. */
  #opened = 0;
  #ended = 0;
  #shed = 0;
  #arrived = 0;
  /** Connections taken and not yet at their first frame, by the bucket of when they were taken. */
  readonly #pending = new Int32Array(PENDING_BUCKETS);
  /** Which bucket (its number since the clock's origin) each slot of {@link #pending} counts now. */
  readonly #pendingBucket = new Float64Array(PENDING_BUCKETS).fill(-1);

  #roomListener: (() => void) | undefined;
  /** Hellos waiting for a place, in arrival order, from {@link #waitersHead} on; {@link #waiting} of them not cancelled. */
  #waiters: PlaceWaiter[] = [];
  #waitersHead = 0;
  #waiting = 0;

  readonly #clock: Clock;

  /** `max`: the places, `maxHellosInFlight`. The loop's busy share is measured, the time read on `clock`. */
  constructor(
    private readonly max: number,
    clock: Clock = realClock,
  ) {
    this.#clock = clock;
    this.#windowStart = clock.now();
  }

  /** Hellos being handled now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Hellos waiting for a place now. */
  get waiting(): number {
    return this.#waiting;
  }

  /**
   * Whether a new connection may be taken now: the hellos in progress and those waiting for a
   * place are under the cap, and those waiting with the connections taken within the last two
   * seconds but not yet at their first frame under the cap times one plus the loop's idle share.
   */
  hasRoom(): boolean {
    if (this.#inFlight + this.#waiting >= this.max) return false;
    // Ahead of the places only as far as the loop has time to spare: a busy loop's hellos wait on
    // it, not on the network, and taking more then only queues upgrades before the connections in.
    const ahead = this.max * (1 + (WAITING_PER_PLACE - 1) * this.#idle);
    return this.#waiting + this.#pendingSince(this.#clock.now()) < ahead;
  }

  /**
   * The retry hint (ms) for a connection refused before it was taken, counted as shed; `ahead`
   * connections are waiting for room already, and its place is behind them.
   */
  upgradeHint(ahead = 0): number {
    return this.#hint(this.#clock.now(), UPGRADE_SHED_WEIGHT, ahead);
  }

  /** A connection was handed over before its upgrade (it is taken, held or refused next). */
  arrived(): void {
    this.#arrived++;
  }

  /** `listener` hears when a place may have freed (a hello ended, a connection sent its first frame or closed). */
  onRoom(listener: () => void): void {
    this.#roomListener = listener;
  }

  /** A connection was taken (its hello, or its shedding, comes later); returns its mark for {@link firstFrame}. */
  opened(): number {
    const now = this.#clock.now();
    this.#opened++;
    this.#measure(now);
    const bucket = Math.floor(now / BUCKET_MS);
    const slot = bucket % PENDING_BUCKETS;
    if (this.#pendingBucket[slot] !== bucket) {
      this.#pendingBucket[slot] = bucket;
      this.#pending[slot] = 0;
    }
    this.#pending[slot]++;
    return now;
  }

  /** The connection taken at `mark` sent its first frame, or closed before it did. */
  firstFrame(mark: number): void {
    const bucket = Math.floor(mark / BUCKET_MS);
    const slot = bucket % PENDING_BUCKETS;
    if (this.#pendingBucket[slot] === bucket && this.#pending[slot] > 0) this.#pending[slot]--;
    this.#roomListener?.();
  }

  /**
   * Counts one more hello in progress and returns when it started, for {@link leave}; when every
   * place is taken, its place in the queue of those waiting for one; undefined (then shed it) when
   * twice the cap wait already, or the hello is longer than 16,384 characters.
   */
  enter(chars: number): number | HelloPlace | undefined {
    if (this.#inFlight < this.max && this.#waiting === 0) {
      this.#inFlight++;
      return this.#clock.now();
    }
    if (this.#waiting >= this.max * WAITING_PER_PLACE || chars > WAITING_HELLO_MAX_CHARS) return undefined;
    let grant!: (since: number) => void;
    const entered = new Promise<number>((resolve) => (grant = resolve));
    const waiter: PlaceWaiter = { grant, since: undefined, cancelled: false };
    this.#waiters.push(waiter);
    this.#waiting++;
    return { entered, cancel: () => this.#cancel(waiter) };
  }

  /** A hello counted by {@link enter} at `since` ended, whatever its outcome: its place goes to the first waiting. */
  leave(since: number): void {
    const now = this.#clock.now();
    this.#inFlight--;
    this.#ended++;
    this.#durationMs += (now - since - this.#durationMs) * DURATION_WEIGHT;
    this.#measure(now);
    if (this.#grantNext(now)) return;
    this.#roomListener?.();
  }

  /** Gives a free place to the first hello waiting for one, if any. */
  #grantNext(now: number): boolean {
    while (this.#waitersHead < this.#waiters.length) {
      const waiter = this.#waiters[this.#waitersHead];
      this.#waiters[this.#waitersHead++] = undefined as unknown as PlaceWaiter;
      if (this.#waitersHead === this.#waiters.length) {
        this.#waiters = [];
        this.#waitersHead = 0;
      }
      if (waiter.cancelled) continue;
      this.#waiting--;
      this.#inFlight++;
      waiter.since = now;
      waiter.grant(now);
      return true;
    }
    return false;
  }

  #cancel(waiter: PlaceWaiter): void {
    if (waiter.cancelled) return;
    waiter.cancelled = true;
    if (waiter.since !== undefined) return this.leave(waiter.since);
    this.#waiting--;
    this.#roomListener?.();
  }

  /** Milliseconds a refused device should wait before it tries again; counts it as shed. */
  retryAfterMs(): number {
    return this.#hint(this.#clock.now(), SHED_WEIGHT);
  }

  /** Connections taken since `now - PENDING_MS` that have not sent their first frame. */
  #pendingSince(now: number): number {
    const oldest = Math.floor(now / BUCKET_MS) - PENDING_BUCKETS + 1;
    let count = 0;
    for (let slot = 0; slot < PENDING_BUCKETS; slot++) {
      if (this.#pendingBucket[slot] >= oldest) count += this.#pending[slot];
    }
    return count;
  }

  /** The next place in the virtual queue, for a device shed at a cost of `weight` devices. */
  #hint(now: number, weight: number, ahead = 0): number {
    this.#shed += weight;
    this.#measure(now);
    const share = Math.max(this.#costMs, (this.#durationMs * this.#idle) / this.max);
    const first = Math.max(now + MIN_HINT_MS, now + ahead * share);
    this.#nextSlot = Math.min(now + MAX_HINT_MS, Math.max(first, this.#nextSlot + share));
    return Math.round(this.#nextSlot - now);
  }

  /**
   * One window's busy time per device. A window with few devices in it (a collection, a burst of
   * accepts not yet handed over) must not triple the estimate: a real slowdown still doubles it
   * per window.
   */
  #learnCost(sample: number): void {
    this.#costMs += (Math.min(sample, 2 * this.#costMs) - this.#costMs) * WEIGHT;
  }

  /** Closes the window once it is long enough, learning a hello's cost from it when it saw enough. */
  #measure(now: number): void {
    if (now - this.#windowStart < WINDOW_MS) return;
    const loop = performance.eventLoopUtilization();
    const window = performance.eventLoopUtilization(loop, this.#loopAt);
    const units = OPEN_WEIGHT * this.#opened + HELLO_WEIGHT * this.#ended + ARRIVAL_WEIGHT * this.#arrived + this.#shed;
    if (units >= MIN_UNITS) {
      this.#idle += (1 - window.utilization - this.#idle) * WEIGHT;
      if (window.utilization >= BUSY) this.#learnCost(window.active / units);
    }
    this.#windowStart = now;
    this.#loopAt = loop;
    this.#opened = 0;
    this.#ended = 0;
    this.#shed = 0;
    this.#arrived = 0;
  }
}
