/**
 * The `actionTokens` storage capability (docs/PROTOCOL.md §21): the action tokens of asks' push
 * buttons, kept only as hashes. Optional: a storage without it gets no action buttons on its
 * pushes (the push opens the app instead). The memory, sql.js and PostgreSQL storages have it;
 * `describeActionTokenConformance` from `chat-gateway/testing` checks one. The gateway also keeps
 * here the receipts of answers' pushes (docs/PROTOCOL.md §21.4): records of the same shape whose
 * `picker_id` starts with `read:`, whose `option_id` is a message id, and whose hash no token has.
 * @module
 */
import type { DeviceId, Owner } from "../protocol/ids.js";

/** One action token as stored: its hash and what it is bound to. */
export interface ActionTokenRecord {
  /** SHA-256 of the token, lower-case hex (64 characters). The token itself is never stored. */
  hash: string;
  owner: Owner;
  /** The ask it answers (docs/PROTOCOL.md §11). */
  picker_id: string;
  /** The option it selects. */
  option_id: string;
  /** The device of the push target it was sent to: the answer's `device_id`. */
  device_id: DeviceId;
  /** The push target it was sent to (the sender's name and its target), for retraction. */
  target: string;
  /** When it stops working at the latest, epoch milliseconds (the ask's `expires_at`). */
  expires_at: number;
  /**
   * The outcome that stands for it, once it was used: opaque text the gateway wrote with
   * {@link ActionTokenStore.settleActionToken}. Absent while unused.
   */
  outcome?: string;
}

/**
 * Where action tokens are kept. Every member may be called concurrently, also by several
 * processes sharing the storage; each is atomic on its own. Writes are durable when they resolve.
 */
export interface ActionTokenStore {
  /** Store new tokens (fresh hashes, no `outcome`). A hash already stored is left as it is. */
  putActionTokens(records: readonly ActionTokenRecord[]): Promise<void>;
  /** The token with this hash, whichever owner has it, or undefined. */
  getActionToken(hash: string): Promise<ActionTokenRecord | undefined>;
  /**
   * Single use: atomically, when the token has no outcome yet, store `outcome` as its outcome.
   * Resolves with the outcome that stands afterwards (this one, or the one an earlier call
   * stored, unchanged), or undefined when no token has this hash. Of any number of concurrent
   * calls for one hash, in any processes, exactly one stores its outcome and all resolve with it.
   */
  settleActionToken(hash: string, outcome: string): Promise<string | undefined>;
  /** The tokens of the owner's ask, used or not, in any order (retraction reads whom it was pushed to). */
  actionTokensOf(owner: Owner, pickerId: string): Promise<ActionTokenRecord[]>;
  /** Forget every token whose `expires_at` is at or before `now`; resolves with how many. */
  deleteExpiredActionTokens(now: number): Promise<number>;
}
