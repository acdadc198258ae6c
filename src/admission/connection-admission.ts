/**
 * One connection's way through admission (docs/PROTOCOL.md §18.5, §2.4): counted against its client
 * address when it is taken, counted as on its way from then until its first frame, then a place
 * among the hellos in progress, or a place in the queue for one, until its hello ends or it closes.
 * The session calls it at these few points and knows nothing else of admission.
 * @module
 */
import { addressKey } from "./address-key.js";
import type { ConnectionCount } from "./connection-count.js";
import type { HelloGate, HelloPlace } from "./hello-gate.js";

/** What one connection asks of admission, in the order it asks. */
export interface ConnectionAdmission {
  /**
   * The connection was taken: it counts as on its way to its hello, and against its client address
   * (`remoteAddress`, when the transport knows it). Returns why it is refused, or undefined.
   */
  open(remoteAddress: string | undefined): string | undefined;
  /** The key its address counts under ({@link addressKey}), once {@link open} let it in with one. */
  readonly address: string | undefined;
  /** Its first frame came (or it closed before one did): it no longer counts as on its way. */
  firstFrame(): void;
  /** Its hello holds a place, or waits for one. */
  readonly entered: boolean;
  /**
   * The hello of `chars` characters asks for a place: false when it is to be shed. When every place
   * is taken it is let in {@link waiting} for one: queue {@link waitForPlace} before the
   * connection's other frames, so that they wait with it.
   */
  enter(chars: number): boolean;
  /** Its hello waits for a place. */
  readonly waiting: boolean;
  /** Resolves once the waiting hello holds its place (or at once when its connection closed meanwhile). */
  waitForPlace(isClosed: () => boolean): Promise<void>;
  /** When a shed hello's device should come back (ms); counts it as shed. */
  retryAfterMs(): number;
  /** The hello ended, whatever its outcome: its place, or its place in the queue, is given back. */
  helloEnded(): void;
  /** The connection closed: everything it held is given back. Safe to call more than once. */
  closed(): void;
}

/** The process-wide parts one connection's admission counts against. */
export interface AdmissionCounts {
  readonly gate: HelloGate;
  /** Open connections per address key (`maxConnectionsPerIp`). */
  readonly addresses: ConnectionCount;
  readonly maxPerAddress: number;
  /** The rate of new connections per address key: false refuses this one. */
  readonly connects: { take(key: string): boolean };
}

/** A connection's admission against the process's counts. */
export class ConnectionPass implements ConnectionAdmission {
  /** The gate's mark of the connection until its first frame. */
  #openedAt: number | undefined;
  /** Since when its hello holds a place. */
  #since: number | undefined;
  /** Its hello's place in the queue, while it waits for a place. */
  #place: HelloPlace | undefined;
  #address: string | undefined;

  constructor(private readonly counts: AdmissionCounts) {}

  open(remoteAddress: string | undefined): string | undefined {
    this.#openedAt = this.counts.gate.opened();
    if (remoteAddress === undefined) return undefined;
    const address = addressKey(remoteAddress);
    // Before the socket counts anywhere: a refused one costs nothing but this reply.
    if (!this.counts.connects.take(address))
      return "too many new connections from this address; reconnect with backoff";
    const most = this.counts.maxPerAddress;
    if (!this.counts.addresses.tryAdd(address, most)) return `too many connections from this address (at most ${most})`;
    this.#address = address;
    return undefined;
  }

  get address(): string | undefined {
    return this.#address;
  }

  get entered(): boolean {
    return this.#since !== undefined || this.#place !== undefined;
  }

  firstFrame(): void {
    if (this.#openedAt !== undefined) this.counts.gate.firstFrame(this.#openedAt);
    this.#openedAt = undefined;
  }

  enter(chars: number): boolean {
    const place = this.counts.gate.enter(chars);
    if (place === undefined) return false;
    if (typeof place === "number") this.#since = place;
    else this.#place = place;
    return true;
  }

  get waiting(): boolean {
    return this.#place !== undefined;
  }

  async waitForPlace(isClosed: () => boolean): Promise<void> {
    const place = this.#place;
    if (!place) return;
    const since = await place.entered;
    if (isClosed()) return; // closing gave the place back
    this.#place = undefined;
    this.#since = since;
  }

  retryAfterMs(): number {
    return this.counts.gate.retryAfterMs();
  }

  helloEnded(): void {
    if (this.#since !== undefined) this.counts.gate.leave(this.#since);
    this.#since = undefined;
    this.#place?.cancel();
    this.#place = undefined;
  }

  closed(): void {
    this.firstFrame();
    this.helloEnded();
    if (this.#address !== undefined) this.counts.addresses.release(this.#address);
    this.#address = undefined;
  }
}
