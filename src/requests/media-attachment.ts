/**
 * The attachment rule of media (docs/PROTOCOL.md §7): an upload goes with one message only, so
 * deleting that message deletes the media without taking it from another message.
 * @module
 */
import { GatewayError } from "../errors.js";
import type { MediaId, MessageId } from "../ids.js";
import type { MediaRecord } from "../contracts/records.js";

/**
 * True when another message than `messageId` holds the media. Storages refuse to attach such media
 * to `messageId`, and deleting `messageId` leaves it alone. Metadata attached to no message (an
 * upload not sent yet, or one stored before the rule existed) is held by no one.
 */
export function heldByAnother(record: MediaRecord | undefined, messageId: MessageId): boolean {
  return record?.message_id !== undefined && record.message_id !== messageId;
}

/** The `unsupported` error for media that a message already holds. */
export function mediaTakenError(mediaId: MediaId): GatewayError {
  return new GatewayError(
    "unsupported",
    `media_ref "${mediaId}" is already attached to a message: each upload goes with one message (media_refs come from media.upload.ack); upload the file again`,
  );
}
