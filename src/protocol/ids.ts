/**
 * Named aliases for the identifiers that cross the wire and the storage boundary. They are
 * plain strings and numbers; the names say which one a signature wants.
 * @module
 */

/** The account everything belongs to: a username, or {@link ANONYMOUS_OWNER} when login is off. */
export type Owner = string;
/** Identifier of a channel or a thread (a thread is a channel with a parent). */
export type ChatId = string;
/** Identifier of a stored message, user or assistant. */
export type MessageId = string;
/** Identifier a device chooses for itself in `hello`; unique per owner. */
export type DeviceId = string;
/** Identifier of stored media; equal to the client's `media_ref` once an upload is acknowledged. */
export type MediaId = string;
/** Identifier the gateway gives one connection; unique across the processes that share a bus. */
export type ConnectionId = string;
/** The `id` a client puts on a request frame, echoed on the frames that answer it. */
export type RequestId = string;
/** Position in an owner's outbox: the sync cursor. Grows by one per stored frame, never reused. */
export type Seq = number;

/**
 * The owner used when login protection is off. `~` is not a legal username character, so it can
 * never collide with a real account.
 */
export const ANONYMOUS_OWNER: Owner = "~anonymous";
