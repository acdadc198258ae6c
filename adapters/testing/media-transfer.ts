// Media over a device's socket (docs/PROTOCOL.md §7): binary chunks framed as
// `uint32 big-endian header length | header JSON | bytes`, uploaded and pulled.
import { createHash } from "node:crypto";
import { expect } from "vitest";
import type { Device } from "./device.js";

const CHUNK_BYTES = 256 * 1024;

function encodeChunk(media: string, offset: number, bytes: Uint8Array): Uint8Array {
  const header = Buffer.from(JSON.stringify({ media, offset }), "utf8");
  const out = Buffer.alloc(4 + header.length + bytes.length);
  out.writeUInt32BE(header.length, 0);
  header.copy(out, 4);
  out.set(bytes, 4 + header.length);
  return out;
}

function decodeChunk(message: Uint8Array): { media: string; offset: number; bytes: Uint8Array } {
  const buffer = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  const length = buffer.readUInt32BE(0);
  const header = JSON.parse(buffer.subarray(4, 4 + length).toString("utf8")) as { media: string; offset: number };
  return { ...header, bytes: buffer.subarray(4 + length) };
}

/** Uploads `bytes` as `mediaRef` in chunks of 256 KiB and expects `media.upload.ack {ok: true}`. */
export async function uploadMedia(device: Device, mediaRef: string, bytes: Uint8Array): Promise<void> {
  device.send("media.upload.start", { media_ref: mediaRef, kind: "document", mime: "application/octet-stream", size: bytes.length, filename: "kit.bin" });
  for (let offset = 0; offset < bytes.length; offset += CHUNK_BYTES) {
    device.socket.send(encodeChunk(mediaRef, offset, bytes.subarray(offset, offset + CHUNK_BYTES)));
  }
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const ack = await device.request("media.upload.end", { media_ref: mediaRef, sha256 }, 10_000);
  expect(ack, "the upload's acknowledgement").toMatchObject({ type: "media.upload.ack", payload: { ok: true, media_ref: mediaRef } });
}

/** Pulls `mediaId` and returns its bytes; every chunk must arrive, in order, before `media.pull.end`. */
export async function pullMedia(device: Device, mediaId: string): Promise<Uint8Array> {
  const from = device.binary.length;
  device.send("media.pull", { media_id: mediaId }, `pull-${mediaId}`);
  const end = await device.waitFor((f) => f.type === "media.pull.end" && f.payload.media_id === mediaId, "media.pull.end", 10_000);
  expect(end.payload.ok).toBe(true);
  const chunks = device.binary.slice(from).map(decodeChunk);
  let offset = 0;
  for (const chunk of chunks) {
    expect(chunk).toMatchObject({ media: mediaId, offset });
    offset += chunk.bytes.length;
  }
  return Buffer.concat(chunks.map((c) => c.bytes));
}
