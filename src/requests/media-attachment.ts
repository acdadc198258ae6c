/**
 * The attachment rule of media (docs/PROTOCOL.md §7): an upload goes with one message only, so
 * deleting that message deletes the media without taking it from another message.
 * @module
 */
import { GatewayError } from "../errors.js";
import type { MediaId } from "../ids.js";

/**
 * The `unsupported` error for media that a message already holds: what the client gets when a
 * storage reports `CommitResult.mediaTaken` (see `Change` for which message holds media).
 */
export function mediaTakenError(mediaId: MediaId): GatewayError {
  return new GatewayError(
    "unsupported",
    `media_ref "${mediaId}" is already attached to a message: each upload goes with one message (media_refs come from media.upload.ack); upload the file again`,
  );
}
