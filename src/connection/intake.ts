/**
 * What a connection's traffic passes on arrival: the caps on new connections per client address,
 * the frame budgets (docs/PROTOCOL.md §2.4), and the queue its frames wait in.
 * @module
 */
import type { Logger } from "../contracts/logger.js";
import type { RateLimit } from "../options/options.js";
import type { Owner } from "../protocol/ids.js";
import { LoopShare } from "../support/loop-share.js";
import type { ConnectionCount } from "./connection-count.js";
import type { SharedBudgets } from "./shared-budgets.js";
import { TokenBucket } from "./token-bucket.js";

/** What the intake of a connection reads and counts through. */
export interface IntakeServices {
  readonly options: { readonly rateLimit: RateLimit; readonly maxConnectionsPerIp: number; readonly now: () => number };
  /** Open connections per client address in this process (`maxConnectionsPerIp`). */
  readonly addresses: ConnectionCount;
  /** The frame budgets shared per address and per owner, and the rate of new connections per address. */
  readonly budgets: SharedBudgets;
  readonly log: Logger;
}

/**
 * Counts a new connection against its client address: undefined when it may stay (then
 * `services.addresses` counts it until it is released), else why it is refused.
 */
export function admitAddress(services: IntakeServices, address: string): string | undefined {
  // Before the socket counts anywhere: a refused one costs nothing but this reply.
  if (!services.budgets.connectsPerAddress.take(address)) {
    return "too many new connections from this address; reconnect with backoff";
  }
  const most = services.options.maxConnectionsPerIp;
  if (!services.addresses.tryAdd(address, most)) return `too many connections from this address (at most ${most})`;
  return undefined;
}

/** One connection's frame budget, and the queue that runs its frames one at a time, in order. */
export class FrameIntake {
  readonly #services: IntakeServices;
  readonly #bucket: TokenBucket;
  #queue: Promise<void> = Promise.resolve();
  readonly #share = new LoopShare();

  constructor(services: IntakeServices) {
    this.#services = services;
    this.#bucket = new TokenBucket(services.options.rateLimit, services.options.now);
  }

  /**
   * One frame against this connection's budget and the budgets it shares with the other
   * connections of its address and, after `hello`, of its owner: reconnecting refills only its own.
   */
  spend(address: string | undefined, owner: Owner | undefined): boolean {
    if (!this.#bucket.take()) return false;
    const { budgets } = this.#services;
    if (address !== undefined && !budgets.framesPerAddress.take(address)) return false;
    return owner === undefined || budgets.framesPerOwner.take(owner);
  }

  /** Runs `work` once the frames before it are done; what it throws is logged. */
  enqueue(work: () => Promise<void>): void {
    // Frames that need no I/O (garbage past the budget) would otherwise run back to back as
    // microtasks, holding every other connection up until the whole flood is worked off.
    this.#queue = this.#queue
      .then(() => this.#share.breathe())
      .then(work)
      .catch((error) => {
        this.#services.log.error("unhandled error in a connection", error);
      });
  }
}
