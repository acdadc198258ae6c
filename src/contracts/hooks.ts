/**
 * The `HookStore` contract: where webhooks (docs/PROTOCOL.md §17) and the delivery keys of their
 * posts are kept. Its own contract, apart from the chat data of `Storage`: pass one as
 * `createGateway({ hookStore })`. The memory, sql.js and PostgreSQL storages are one too, on the
 * same database (`hookStore: storage`); `describeHookStoreConformance` from `chat-gateway/testing`
 * checks one of your own.
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

/**
 * Keeps an owner's webhooks and the delivery keys of their posts. The HTTP route of
 * `chat-gateway/hooks` (`createHookHandler`) finds each post's hook here by id and claims its keys;
 * `addHook`, `rotateHook`, `removeHook` and `listHooks` manage the records.
 *
 * Rules for every member:
 * - **Owners.** Hook ids are unique across owners (random, at least 128 bits); every member that
 *   takes an `owner` never returns, changes or counts another owner's hook.
 * - **Copies.** What goes in and comes out is the caller's: mutating it later never changes what
 *   is stored.
 * - **Concurrency.** Every member may be called concurrently, also by several processes sharing
 *   the store; each is atomic on its own. {@link HookStore.claimHookKey} is what stops a replayed
 *   or retried post from landing twice: of concurrent claims of one key, in any processes,
 *   exactly one takes it.
 * - **Durability.** A write is durable when it resolves.
 * - **Adoption.** The first user may adopt the anonymous owner's chats (docs/PROTOCOL.md §10.4):
 *   the storage's `adoptOwner` moves the channels, not the hooks. A store kept in the same
 *   database as the storage should move the owner's hooks in that same step, since they post into
 *   those channels (the built-in storages do); a store elsewhere keeps them with the anonymous
 *   owner, whose posts then find no channel (404).
 */
export interface HookStore {
  /**
   * Insert or replace a hook by `hook_id`, and by `name` within the owner: a new hook of the same
   * name replaces the old one, whose id then finds nothing and whose delivery keys are forgotten.
   */
  putHook(owner: Owner, hook: HookRecord): Promise<void>;
  /** The hook with this id, whichever owner has it, or undefined. */
  getHook(hookId: string): Promise<OwnedHook | undefined>;
  /** Every hook of the owner, in any order. */
  listHooks(owner: Owner): Promise<HookRecord[]>;
  /** Forget a hook and its delivery keys; false when the owner has no such hook. */
  deleteHook(owner: Owner, hookId: string): Promise<boolean>;
  /**
   * Take a delivery key of a hook (a signature, against replays, or an `Idempotency-Key`) until
   * `expiresAt` (unix ms), atomically across every process sharing the store. A key held and not
   * expired at `now` is not taken again: the answer names the `message_id` its delivery stored, if
   * any. An expired key is taken afresh. Keys are per hook: the same key of another hook is another key.
   */
  claimHookKey(hookId: string, key: string, expiresAt: number, now: number): Promise<HookClaim>;
  /**
   * Record what a claimed key's delivery stored, or with `null` give the key up (the delivery
   * failed, so a retry may run it). A key not held is ignored.
   */
  settleHookKey(hookId: string, key: string, messageId: string | null): Promise<void>;
}
