/**
 * Admission (docs/PROTOCOL.md §18.5, §2.4): whether a new connection may start at all, and when,
 * counting the caps per address. Before its upgrade a transport hands it to the queue
 * ({@link Admission.admit}); once taken, it gets its {@link ConnectionAdmission}, which counts it
 * against its address and gives its hello a place. One per gateway process; it knows nothing of
 * what a connection asks for once it is in.
 * @module
 */
import { realClock, type Clock } from "../support/clock.js";
import { ConnectionCount } from "./connection-count.js";
import { ConnectionPass, type AdmissionCounts, type ConnectionAdmission } from "./connection-admission.js";
import { HelloGate } from "./hello-gate.js";
import { AdmissionQueue, type AdmissionRequest } from "./queue.js";

/** What admission is told by the gateway that makes it. */
export interface AdmissionOptions {
  /** Hellos in progress at once (`maxHellosInFlight`). */
  readonly maxHellosInFlight: number;
  /** Connections waiting for room at once (`maxConnectionsWaiting`). */
  readonly maxConnectionsWaiting: number;
  /** Open connections, and connections waiting, of one address (`maxConnectionsPerIp`). */
  readonly maxConnectionsPerIp: number;
  /** How long a connection waits for room unless its transport says (ms; `helloTimeoutMs`). */
  readonly helloTimeoutMs: number;
  /** The rate of new connections per address: a budget that refuses with false (`connectRateLimit`). */
  readonly connects: { take(key: string): boolean };
  /** A connection was refused before its upgrade (counted in `stats().hellos.shed`). */
  readonly shed: () => void;
  /** A transport's `take` or `refuse` threw for a waiting connection. */
  readonly failed: (error: unknown) => void;
  /** The time and timers admission runs on (default the real clock). */
  readonly clock?: Clock;
}

/** A gateway process's admission. */
export class Admission {
  readonly #gate: HelloGate;
  readonly #queue: AdmissionQueue;
  readonly #counts: AdmissionCounts;

  constructor(options: AdmissionOptions) {
    const clock = options.clock ?? realClock;
    this.#gate = new HelloGate(options.maxHellosInFlight, clock);
    const limits = {
      maxWaiting: options.maxConnectionsWaiting,
      maxPerAddress: options.maxConnectionsPerIp,
      // Unless the transport says: as long as it would have for its hello once taken.
      maxWaitMs: options.helloTimeoutMs,
    };
    this.#queue = new AdmissionQueue(this.#gate, limits, options.shed, options.failed, clock);
    this.#counts = {
      gate: this.#gate,
      addresses: new ConnectionCount(),
      maxPerAddress: options.maxConnectionsPerIp,
      connects: options.connects,
    };
  }

  /** Takes, holds or refuses a connection before its upgrade; the returned function withdraws it. */
  admit(request: AdmissionRequest): () => void {
    return this.#queue.admit(request);
  }

  /** The admission of one connection the gateway took. */
  connection(): ConnectionAdmission {
    return new ConnectionPass(this.#counts);
  }

  /** Connections waiting for room before their upgrade, and hellos waiting for a place, now. */
  waiting(): { connections: number; hellos: number } {
    return { connections: this.#queue.waiting, hellos: this.#gate.waiting };
  }

  /** The gateway closes: every waiting connection is refused, and every one handed over from now on. */
  close(): void {
    this.#queue.close();
  }
}
