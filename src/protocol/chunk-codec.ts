/**
 * The binary media chunk (docs/PROTOCOL.md §7): `uint32 big-endian header length | header JSON
 * (UTF-8) {media, offset} | bytes`. On Uint8Array and DataView only, so browsers and Node share it.
 * @module
 */
import { GatewayError } from "./errors.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One decoded media chunk: the `media_ref` (upload) or `media_id` (pull) it belongs to, where its bytes start, and the bytes. */
export interface MediaChunk {
  media: string;
  /** Bytes of the same media sent before this chunk. */
  offset: number;
  /** A view into the message, not a copy. */
  bytes: Uint8Array;
}

/** Build a binary media message carrying `bytes` of `media` starting at `offset`. */
export function encodeChunk(media: string, offset: number, bytes: Uint8Array): Uint8Array {
  const header = encoder.encode(JSON.stringify({ media, offset }));
  const out = new Uint8Array(4 + header.byteLength + bytes.byteLength);
  new DataView(out.buffer).setUint32(0, header.byteLength);
  out.set(header, 4);
  out.set(bytes, 4 + header.byteLength);
  return out;
}

/**
 * Split a binary media message into its header and bytes, or say what is wrong when it is not
 * one: shorter than its header, a header that is not JSON, or one without a string `media` and a
 * non-negative integer `offset`. Never throws, so a flood of garbage costs no error objects.
 */
export function readChunk(data: Uint8Array): MediaChunk | { problem: string } {
  if (data.byteLength < 4) return { problem: "binary frame too short for a media chunk header" };
  const length = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0);
  if (4 + length > data.byteLength) return { problem: "media chunk header length exceeds the frame" };
  let header: { media?: unknown; offset?: unknown } | null;
  try {
    header = JSON.parse(decoder.decode(data.subarray(4, 4 + length)));
  } catch {
    return { problem: "media chunk header is not JSON" };
  }
  if (typeof header?.media !== "string" || !Number.isInteger(header.offset) || (header.offset as number) < 0) {
    return { problem: `media chunk header needs "media" (string) and "offset" (integer)` };
  }
  return { media: header.media, offset: header.offset as number, bytes: data.subarray(4 + length) };
}

/**
 * Split a binary media message into its header and bytes. Throws a `GatewayError` `unsupported`
 * saying what is wrong when it is not one (see {@link readChunk}).
 */
export function decodeChunk(data: Uint8Array): MediaChunk {
  const chunk = readChunk(data);
  if ("problem" in chunk) throw new GatewayError("unsupported", chunk.problem);
  return chunk;
}
