// Media over a device's socket (docs/PROTOCOL.md §7): uploaded and pulled in binary chunks.
import { createHash } from "node:crypto";
import { expect } from "vitest";
import { CHUNK_BYTES, decodeMediaChunk, encodeMediaChunk } from "chat-gateway/client";
import type { Device } from "./device.js";

/** Uploads `bytes` as `mediaRef` in chunks of 256 KiB and expects `media.upload.ack {ok: true}`. */
export async function uploadMedia(device: Device, mediaRef: string, bytes: Uint8Array): Promise<void> {
  device.send("media.upload.start", {
    media_ref: mediaRef,
    kind: "document",
    mime: "application/octet-stream",
    size: bytes.length,
    filename: "kit.bin",
  });
  for (let offset = 0; offset < bytes.length; offset += CHUNK_BYTES) {
    device.socket.send(encodeMediaChunk(mediaRef, offset, bytes.subarray(offset, offset + CHUNK_BYTES)));
  }
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const ack = await device.request("media.upload.end", { media_ref: mediaRef, sha256 }, 10_000);
  expect(ack, "the upload's acknowledgement").toMatchObject({
    type: "media.upload.ack",
    payload: { ok: true, media_ref: mediaRef },
  });
}

/** Pulls `mediaId` and returns its bytes; every chunk must arrive, in order, before `media.pull.end`. */
export async function pullMedia(device: Device, mediaId: string): Promise<Uint8Array> {
  const from = device.binary.length;
  device.send("media.pull", { media_id: mediaId }, `pull-${mediaId}`);
  const end = await device.waitFor(
    (f) => f.type === "media.pull.end" && f.payload.media_id === mediaId,
    "media.pull.end",
    10_000,
  );
  expect(end.payload.ok).toBe(true);
  const chunks = device.binary.slice(from).map((message) => decodeMediaChunk(message)!);
  let offset = 0;
  for (const chunk of chunks) {
    expect(chunk).toMatchObject({ media: mediaId, offset });
    offset += chunk.bytes.length;
  }
  return Buffer.concat(chunks.map((c) => c.bytes));
}
