/**
 * Images through a door (docs/PROTOCOL.md §19.3): a `data:` URL of a raster image type is decoded
 * and uploaded as the door device's media, exactly as a WebSocket device uploads
 * (docs/PROTOCOL.md §7), then sent with the message. The gateway never fetches a URL.
 * @module
 */
import { createHash, randomUUID } from "node:crypto";
import { encodeChunk, LIMITS } from "chat-gateway/protocol";
import type { DoorDevice } from "./door-device.js";
import { invalidRequest } from "./openai-errors.js";

/** An image a request carried, decoded. */
export interface DoorImage {
  mime: string;
  bytes: Buffer;
}

/** The image types a door takes: pictures a browser only ever decodes as pictures (no SVG, which runs scripts). */
export const DOOR_IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** Strict base64 (RFC 4648 section 4, padded or not); whitespace is not allowed inside a data: URL here. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

/**
 * The image a `data:` URL holds. Not a `data:` URL: 400, the gateway never fetches one; a type
 * that is not one of {@link DOOR_IMAGE_TYPES}, a URL that is not base64, or bad base64: 400.
 */
export function readImageUrl(url: unknown, where: string): DoorImage {
  if (typeof url !== "string" || !/^data:/i.test(url))
    throw invalidRequest(
      `${where}: an image must be a data: URL; the gateway never fetches a URL`,
      "invalid_image_url",
    );
  const comma = url.indexOf(",");
  const head = comma < 0 ? "" : url.slice(5, comma).toLowerCase();
  const params = head.split(";").map((p) => p.trim());
  const mime = params[0] ?? "";
  if (!DOOR_IMAGE_TYPES.has(mime))
    throw invalidRequest(
      `${where}: an image must be one of ${[...DOOR_IMAGE_TYPES].join(", ")}, as a base64 data: URL`,
      "unsupported_image_type",
    );
  const data = url.slice(comma + 1);
  if (!params.includes("base64") || data === "" || !BASE64.test(data))
    throw invalidRequest(`${where}: the image's data: URL is not valid base64`, "invalid_image_data");
  return { mime, bytes: Buffer.from(data, "base64") };
}

/** A file name for an uploaded image, from its type. */
function filenameOf(image: DoorImage, index: number): string {
  return `image-${index + 1}.${image.mime.slice("image/".length).replace("jpeg", "jpg")}`;
}

/**
 * Uploads one image as the device's media (`media.upload.start`, the chunks, `media.upload.end`)
 * and resolves with its `media_id`. A refusal of the gateway (no media store, over the media
 * size limit: `media_too_large`) rejects with its error; a failed acknowledgement is a 400.
 */
async function uploadImage(device: DoorDevice, image: DoorImage, index: number): Promise<string> {
  const ref = `door-${randomUUID()}`;
  // `media.upload.start` has no success response: only its refusal comes back, before the end's answer.
  const refused = device.request("media.upload.start", {
    media_ref: ref,
    kind: "image",
    mime: image.mime,
    size: image.bytes.byteLength,
    filename: filenameOf(image, index),
  });
  for (let offset = 0; offset < image.bytes.byteLength; offset += LIMITS.mediaChunkBytes) {
    const piece = image.bytes.subarray(offset, offset + LIMITS.mediaChunkBytes);
    device.sendBinary(encodeChunk(ref, offset, piece));
  }
  const sha256 = createHash("sha256").update(image.bytes).digest("hex");
  const ack = await Promise.race([device.request("media.upload.end", { media_ref: ref, sha256 }), refused]);
  if (ack.payload.ok !== true)
    throw invalidRequest(`the image ${index + 1} could not be stored`, "image_upload_failed");
  return ref;
}

/** Uploads a message's images in order; resolves with their media ids, for `message.send.media_refs`. */
export async function uploadImages(device: DoorDevice, images: readonly DoorImage[]): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, image] of images.entries()) ids.push(await uploadImage(device, image, i));
  return ids;
}
