/**
 * The records of webhooks (docs/PROTOCOL.md §17): what a storage with the `hooks` capability keeps.
 * @module
 */
import type { ChatId, MessageId, Owner } from "../protocol/ids.js";

/** How a hook's post lands: as an assistant message, or as the prompt of an agent turn. */
export type HookMode = "post" | "turn";

/** One webhook of an owner, bound to one automation channel. */
export interface HookRecord {
  /** Random, at least 128 bits; the only lookup key of `POST /api/hooks/{hook_id}`. */
  hook_id: string;
  /** The owner's name for it, unique per owner. */
  name: string;
  chat_id: ChatId;
  mode: HookMode;
  /**
   * The signing secret (at least 256 random bits, hex). Kept as given, not hashed: the gateway
   * must compute the HMAC of each post with it.
   */
  secret: string;
  /** Unix milliseconds. */
  created_at: number;
}

/** A hook with the owner it belongs to (what a lookup by id answers). */
export interface OwnedHook {
  owner: Owner;
  hook: HookRecord;
}

/**
 * What claiming a delivery key answers: `claimed` when this call took it; otherwise the key is
 * already held, with the `message_id` its delivery stored (absent while it is still running).
 */
export type HookClaim = { claimed: true } | { claimed: false; message_id?: MessageId };
