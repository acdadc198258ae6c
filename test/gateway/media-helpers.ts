// Uploading media over a real socket, shared by the media and the limits tests.
import { createHash } from "node:crypto";
import { encodeChunk } from "chat-gateway/protocol";
import type { Client } from "./harness.js";

export const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

export async function upload(
  c: Client,
  ref: string,
  bytes: Buffer,
  opts: { size?: number; hash?: string; chunk?: number } = {},
) {
  const start = await sendAndSettle(c, "media.upload.start", {
    media_ref: ref,
    kind: "image",
    mime: "image/png",
    size: opts.size ?? bytes.length,
    filename: `${ref}.png`,
  });
  if (start) return start;
  const step = opts.chunk ?? 256 * 1024;
  for (let at = 0; at < bytes.length; at += step)
    c.raw(Buffer.from(encodeChunk(ref, at, bytes.subarray(at, at + step))));
  return c.request("media.upload.end", { media_ref: ref, sha256: opts.hash ?? sha(bytes) });
}

/** media.upload.start has no success response: an error would come back with the id, so ping after it. */
export async function sendAndSettle(c: Client, type: string, payload: unknown) {
  const from = c.frames.length;
  c.send(type, payload, `up-${payload && (payload as any).media_ref}`);
  await c.request("ping", {});
  return c.frames.slice(from).find((f) => f.type === "error");
}
