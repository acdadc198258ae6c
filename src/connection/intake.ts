/**
 * What a connection's traffic passes on arrival: the frame budgets (docs/PROTOCOL.md §2.4), and the
 * queue its frames wait in (the caps on connections per client address are admission's). Functions over the
 * connection's own state rather than one more object per connection (bench/capacity.ts).
 * @module
 */
import type { Logger } from "../contracts/logger.js";
import { LoopShare } from "../support/loop-share.js";
import type { FairShare, SharedBudgets } from "./shared-budgets.js";
import { frameCost, type RateLimit, type TokenBucket } from "./token-bucket.js";
import { throttleReads, type Pausable } from "./read-pause.js";
import type { Clock } from "../support/clock.js";

/** What the intake of a connection reads and counts through. */
export interface IntakeServices {
  readonly options: { readonly rateLimit: RateLimit; readonly clock: Clock };
  /** The frame budgets shared per address and per owner, and the rate of new connections per address. */
  readonly budgets: SharedBudgets;
  readonly log: Logger;
}

/** A connection's draws on the frame budgets it shares (docs/PROTOCOL.md §2.4), from when it counts against each. */
export interface Shares {
  address?: FairShare;
  owner?: FairShare;
}

/** The connection closed: the others of its address and owner share their budgets without it. */
export function leaveShares(shares: Shares): void {
  shares.address?.leave();
  shares.owner?.leave();
}

/** A connection's side of {@link spendFrame}: its socket, own budget, and its shares of its address's and owner's. */
export interface FrameSpender {
  readonly conn: Pausable;
  readonly bucket: TokenBucket;
  readonly shares: Shares;
}

/**
 * One frame of `size` characters (bytes, for binary) against the connection's own budget and its
 * fair shares of the budgets of its address and, after `hello`, of its owner: reconnecting refills
 * only its own, and a neighbour past its share is refused before it can spend this one's. A large
 * frame weighs more ({@link frameCost}). Past a budget the connection stops reading for as long as
 * its own budget takes to earn the frame back.
 */
export function spendFrame(services: IntakeServices, from: FrameSpender, size: number): boolean {
  const cost = frameCost(size);
  const { address, owner } = from.shares;
  const spent = from.bucket.take(cost) && (address?.take(cost) ?? true) && (owner?.take(cost) ?? true);
  if (!spent) throttleReads(services.options.clock, from.conn, (cost * 1000) / services.options.rateLimit.perSecond);
  return spent;
}

/** A `ping` this long or shorter is answered outside the frame budgets; one with more in it is an ordinary frame. */
const PING_MAX_CHARS = 1_024;

/**
 * Whether a frame's text is a small `ping` (docs/PROTOCOL.md §2.4): never refused for a budget, so
 * a device can tell a live connection from a dead one whatever its neighbours send. Parsed only
 * when short and naming `ping`, so a flood of other frames costs no second parse.
 */
export function isSmallPing(text: string): boolean {
  if (text.length > PING_MAX_CHARS || !text.includes('"ping"')) return false;
  try {
    return (JSON.parse(text) as { type?: unknown }).type === "ping";
  } catch {
    return false;
  }
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
