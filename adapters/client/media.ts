/**
 * Browser-safe media helpers: the binary chunk format of docs/PROTOCOL.md §7 (the protocol
 * module's codec) and sha256 via WebCrypto (or `@noble/hashes` where WebCrypto is missing).
 * @module
 */
import { sha256 } from "@noble/hashes/sha2";
import { decodeChunk, encodeChunk, LIMITS, type MediaChunk } from "chat-gateway/protocol";

/** Largest chunk the client sends (bytes), the protocol's limit. */
export const CHUNK_BYTES = LIMITS.mediaChunkBytes;

/** Build a binary media message: `uint32 BE header length | header JSON {media, offset} | bytes`. */
export const encodeMediaChunk: (media: string, offset: number, bytes: Uint8Array) => Uint8Array = encodeChunk;

/** Split a binary media message into its header and bytes; undefined when it is not one. */
export function decodeMediaChunk(data: Uint8Array): MediaChunk | undefined {
  try {
    return decodeChunk(data);
  } catch {
    return undefined;
  }
}

function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/**
 * Hex sha256 of some bytes, with WebCrypto (`crypto.subtle`). Pages served over plain http from
 * another machine have no `crypto.subtle` (it needs a secure context, and a phone on the LAN opens
 * http://192.168.x.y), so the audited JavaScript SHA-256 of `@noble/hashes` takes over there.
 */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle) return toHex(new Uint8Array(await subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)));
  return toHex(sha256(bytes));
}

/** A random id from `crypto.getRandomValues` (available in insecure contexts too). */
export function randomId(prefix: string): string {
  const bytes = new Uint8Array(12);
  globalThis.crypto.getRandomValues(bytes);
  return `${prefix}${toHex(bytes)}`;
}

/** The protocol's media kind for a MIME type. */
export function kindOf(mime: string): "image" | "audio" | "video" | "document" {
  if (mime.startsWith("image/")) return "image";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  return "document";
}

/** The bytes of a Blob, an ArrayBuffer or a view of one (a view is not copied). */
export async function toBytes(data: Blob | ArrayBuffer | ArrayBufferView): Promise<Uint8Array> {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(await data.arrayBuffer());
}
