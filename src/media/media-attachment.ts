/**
 * The attachment rule of media (docs/PROTOCOL.md §7): an upload goes with one message only, so
 * deleting that message deletes the media without taking it from another message.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { MediaId, Owner } from "../protocol/ids.js";
import type { MediaRef } from "../contracts/records.js";
import type { Storage } from "../contracts/storage.js";

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

/** The media a send attaches, each ref checked: listed once, uploaded, and held by no message yet. */
export async function attachedMedia(
  storage: Pick<Storage, "getMedia">,
  owner: Owner,
  refs: readonly string[],
): Promise<MediaRef[]> {
  if (new Set(refs).size !== refs.length)
    throw new GatewayError("unsupported", `field "media_refs": list each media_ref once`);
  const media: MediaRef[] = [];
  for (const ref of refs) {
    const record = await storage.getMedia(owner, ref);
    if (!record)
      throw new GatewayError("not_found", `unknown media_ref "${ref}": upload it and wait for media.upload.ack`);
    // Storage enforces this too (atomically); checking here answers before anything else happens.
    if (record.message_id !== undefined) throw mediaTakenError(ref);
    media.push({
      media_id: record.media_id,
      kind: record.kind,
      mime: record.mime,
      size: record.size,
      filename: record.filename,
    });
  }
  return media;
}
