/**
 * Waiting for room before the upgrade (docs/PROTOCOL.md §18.5): a transport hands each new
 * connection here before it spends work on it, and the queue takes it at once while the hello
 * gate has room, or holds it, first come first served, until a place frees. A held connection
 * costs a socket and its parsed request, not an upgrade and a hello queued behind the others, so
 * a reconnect storm is let in as fast as the process finishes hellos, with no device sent away
 * to come back later. What the queue cannot hold (too many waiting, too many from one address,
 * or waiting too long) is refused with the gate's retry hint.
 * @module
 */
import { realClock, type Clock, type ClockTimer } from "../support/clock.js";
import { addressKey } from "./address-key.js";
import { ConnectionCount } from "./connection-count.js";
import type { HelloGate } from "./hello-gate.js";
import { TUNING } from "./tuning.js";

/** A new connection waiting for room ({@link Gateway.admitConnection}). */
export interface AdmissionRequest {
  /** The client address: at most `maxConnectionsPerIp` connections of one address wait at once. */
  readonly address?: string;
  /**
   * Take the connection now: call `gateway.accept` synchronously in here (or do nothing when it
   * is gone meanwhile), so the gateway counts it before it lets the next one in.
   */
  take(): void;
  /** Refuse it, asking the client to come back in `retryAfterMs` (HTTP 503 with `Retry-After-Ms` for ws). */
  refuse(retryAfterMs: number): void;
  /**
   * How long it may wait for room before it is refused (ms; default the gateway's
   * `helloTimeoutMs`). Waiters are refused in arrival order, so one may wait as long as those
   * ahead of it when they were given longer.
   */
  readonly maxWaitMs?: number;
}

/** How much the queue holds. */
export interface QueueLimits {
  /** Connections waiting at once, from every address. */
  readonly maxWaiting: number;
  /** Connections of one address waiting at once. */
  readonly maxPerAddress: number;
  /** How long one waits before it is refused with a hint instead, unless it says (ms). */
  readonly maxWaitMs: number;
}

interface Waiter {
  readonly request: AdmissionRequest;
  /** When it is refused if it is still waiting (clock time). */
  readonly deadline: number;
  /** The key its address is counted under ({@link addressKey}), if it has one. */
  readonly address: string | undefined;
  done: boolean;
}

/** The queue is looked at this often while it holds anyone: the gate's pending count ages by the quarter second. */
const TICK_MS = TUNING.queueTickMs.value;
/** Waiters taken per turn of the event loop; the rest are taken in the next turns, after the loop has read what the others sent. */
const TAKEN_PER_TURN = TUNING.takenPerTurn.value;

/** Holds new connections until the hello gate has room, in arrival order. */
export class AdmissionQueue {
  #waiting: Waiter[] = [];
  /** Index of the first waiter still in the queue: shifting an array of thousands on every admission is quadratic. */
  #head = 0;
  /** Waiters neither taken, refused nor withdrawn. */
  #live = 0;
  readonly #perAddress = new ConnectionCount();
  #tick: ClockTimer | undefined;
  #wakeScheduled = false;
  /** The gateway closes: every connection is refused, the waiting ones and those that come later. */
  #closed = false;

  constructor(
    private readonly gate: HelloGate,
    private readonly limits: QueueLimits,
    private readonly shed: () => void,
    /** A transport's `take` or `refuse` threw for a waiter (its own call to `admit` throws instead). */
    private readonly failed: (error: unknown) => void,
    private readonly clock: Clock = realClock,
  ) {
    gate.onRoom(() => this.#scheduleWake());
  }

  /** Connections waiting now. */
  get waiting(): number {
    return this.#live;
  }

  /** Takes, holds or refuses `request`; the returned function withdraws it (its socket closed while it waited). */
  admit(request: AdmissionRequest): () => void {
    this.gate.arrived();
    if (this.#closed) return this.#refuse(request);
    if (this.waiting === 0 && this.gate.hasRoom()) {
      request.take();
      return noop;
    }
    const address = request.address === undefined ? undefined : addressKey(request.address);
    if (this.waiting >= this.limits.maxWaiting) return this.#refuse(request);
    if (address !== undefined && !this.#perAddress.tryAdd(address, this.limits.maxPerAddress))
      return this.#refuse(request);
    const deadline = this.clock.now() + (request.maxWaitMs ?? this.limits.maxWaitMs);
    const waiter: Waiter = { request, deadline, address, done: false };
    this.#waiting.push(waiter);
    this.#live++;
    this.#tick ??= this.clock.setInterval(() => this.#scheduleWake(), TICK_MS);
    return () => this.#finish(waiter);
  }

  /** Refuses every waiting connection, and every one handed over from now on (the gateway shuts down). */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#take(Number.POSITIVE_INFINITY)) this.#settle(() => this.#refuse(waiter.request));
  }

  #refuse(request: AdmissionRequest): () => void {
    this.shed();
    request.refuse(this.gate.upgradeHint(this.#live));
    return noop;
  }

  #scheduleWake(): void {
    if (this.#wakeScheduled || this.waiting === 0) return;
    this.#wakeScheduled = true;
    // The next turn of the loop, not a time: what the sockets sent in this one is read first.
    setImmediate(() => {
      this.#wakeScheduled = false;
      this.#wake();
    });
  }

  /** Lets waiters in while the gate has room, a slice per turn, then refuses those that waited too long. */
  #wake(): void {
    for (let taken = 0; this.waiting > 0 && this.gate.hasRoom(); taken++) {
      if (taken === TAKEN_PER_TURN) {
        this.#scheduleWake();
        break;
      }
      const [waiter] = this.#take(1);
      if (waiter) this.#settle(() => waiter.request.take());
    }
    const now = this.clock.now();
    for (let waiter = this.#first(); waiter !== undefined && waiter.deadline <= now; waiter = this.#first()) {
      this.#take(1);
      this.#settle(() => this.#refuse(waiter.request));
    }
  }

  /**
   * Runs a transport's callback for a waiter (from a timer, or while the gateway closes): one that
   * throws loses its own connection, not the process nor the other waiters.
   */
  #settle(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      this.failed(error);
    }
  }

  /** The longest waiting connection still in the queue. */
  #first(): Waiter | undefined {
    while (this.#head < this.#waiting.length && this.#waiting[this.#head].done) this.#head++;
    return this.#waiting[this.#head];
  }

  /** Removes up to `count` waiters from the head, skipping withdrawn ones; stops the tick once empty. */
  #take(count: number): Waiter[] {
    const taken: Waiter[] = [];
    while (taken.length < count && this.#head < this.#waiting.length) {
      const waiter = this.#waiting[this.#head++];
      if (waiter.done) continue;
      this.#finish(waiter);
      taken.push(waiter);
    }
    if (this.#head === this.#waiting.length) {
      this.#waiting = [];
      this.#head = 0;
      this.clock.clearInterval(this.#tick);
      this.#tick = undefined;
    }
    return taken;
  }

  /** The waiter leaves the queue's counts (taken, refused or withdrawn); its slot is skipped later. */
  #finish(waiter: Waiter): void {
    if (waiter.done) return;
    waiter.done = true;
    this.#live--;
    if (waiter.address !== undefined) this.#perAddress.release(waiter.address);
  }
}

function noop(): void {}
