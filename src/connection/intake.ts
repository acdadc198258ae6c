/**
 * What a connection's traffic passes on arrival: the caps on new connections per client address,
 * the frame budgets (docs/PROTOCOL.md §2.4), and the queue its frames wait in. Functions over the
 * connection's own state rather than one more object per connection (bench/capacity.ts).
 * @module
 */
import type { Logger } from "../contracts/logger.js";
import type { Owner } from "../protocol/ids.js";
import { LoopShare } from "../support/loop-share.js";
import type { ConnectionCount } from "./connection-count.js";
import type { SharedBudgets } from "./shared-budgets.js";
import { frameCost, type RateLimit, type TokenBucket } from "./token-bucket.js";
import { throttleReads, type Pausable } from "./read-pause.js";

/** What the intake of a connection reads and counts through. */
export interface IntakeServices {
  readonly options: { readonly maxConnectionsPerIp: number; readonly rateLimit: RateLimit };
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

/** A connection's side of {@link spendFrame}: its socket, own budget, client address and owner. */
export interface FrameSpender {
  readonly conn: Pausable;
  readonly bucket: TokenBucket;
  readonly address: string | undefined;
  readonly owner: Owner | undefined;
}

/**
 * One frame of `size` characters (bytes, for binary) against the connection's own budget and the
 * budgets it shares with the other connections of its address and, after `hello`, of its owner:
 * reconnecting refills only its own. A large frame weighs more ({@link frameCost}). Past a budget
 * the connection stops reading for as long as its own budget takes to earn the frame back.
 */
export function spendFrame(services: IntakeServices, from: FrameSpender, size: number): boolean {
  const cost = frameCost(size);
  const { budgets } = services;
  const spent =
    from.bucket.take(cost) &&
    (from.address === undefined || budgets.framesPerAddress.take(from.address, cost)) &&
    (from.owner === undefined || budgets.framesPerOwner.take(from.owner, cost));
  if (!spent) throttleReads(from.conn, (cost * 1000) / services.options.rateLimit.perSecond);
  return spent;
}

/**
 * The frames of one connection queued and not yet worked off, and how long they have held the loop.
 * A connection holds one only while frames wait: an idle connection holds neither a settled
 * promise nor a {@link LoopShare}, and each burst starts its own share.
 */
export interface FrameBurst {
  tail: Promise<void>;
  readonly share: LoopShare;
  waiting: number;
}

/** What holds a connection's {@link FrameBurst}: told when the burst is worked off, to let it go. */
export interface BurstHolder {
  burstDone(burst: FrameBurst): void;
}

/**
 * Queues `work` after the frames of `burst`, or starts a burst when it is undefined, and returns
 * the burst it joined; what `work` throws is logged.
 */
export function queueAfter(
  services: IntakeServices,
  burst: FrameBurst | undefined,
  holder: BurstHolder,
  work: () => Promise<void>,
): FrameBurst {
  const joined = burst ?? { tail: Promise.resolve(), share: new LoopShare(), waiting: 0 };
  joined.waiting++;
  const settle = () => {
    if (--joined.waiting === 0) holder.burstDone(joined);
  };
  // Frames that need no I/O (garbage past the budget) would otherwise run back to back as
  // microtasks, holding every other connection up until the whole flood is worked off.
  joined.tail = joined.tail
    .then(() => joined.share.breathe())
    .then(work)
    .then(settle, (error) => {
      services.log.error("unhandled error in a connection", error);
      settle();
    });
  return joined;
}
