/**
 * Media over the socket (docs/PROTOCOL.md §7): uploads hashed as chunks arrive and written through the
 * {@link MediaStore} without buffering whole files, and pulls streamed back in chunks.
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { GatewayError } from "../protocol/errors.js";
import type { MediaId, Owner, RequestId } from "../protocol/ids.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import type { Storage } from "../contracts/storage.js";
import type { Logger } from "../contracts/logger.js";
import type { ResolvedOptions } from "../options/options.js";
import type { MediaStore, MediaWriter } from "../contracts/media-store.js";
import { MEDIA_TYPE_MAX_LENGTH, mediaTypeEssence } from "../protocol/media-types.js";
import { LIMITS } from "../protocol/limits.js";
import type { ServerFrame } from "../protocol/protocol.js";
import { decodeChunk, encodeChunk, readChunk } from "../protocol/chunk-codec.js";
import type { MediaRecord } from "../contracts/records.js";

/** What the media code needs of its connection. */
export interface MediaSession {
  readonly owner: Owner;
  readonly caps: { media: boolean };
  send(frame: ServerFrame, requestId?: RequestId): void;
  sendBinary(data: Uint8Array): void;
  /** Resolves when the socket's buffer is below the soft limit; false once the connection ended. */
  drained(): Promise<boolean>;
}

/** What the media handlers read and write through. */
export interface MediaServices {
  readonly storage: Storage;
  readonly log: Logger;
  now(): number;
  readonly options: Pick<
    ResolvedOptions,
    "mediaStore" | "maxMediaBytes" | "maxUploadsPerConnection" | "maxPullsPerConnection"
  >;
}

/** A connection's uploads in flight and its pulls. */
export interface Uploads {
  start(payload: ClientPayloads["media.upload.start"], requestId: RequestId | undefined): Promise<void>;
  chunk(data: Uint8Array): Promise<void>;
  /** True when `data` is a chunk of an upload in flight on this connection (checked without throwing). */
  inFlight(data: Uint8Array): boolean;
  end(payload: ClientPayloads["media.upload.end"], requestId: RequestId | undefined): Promise<void>;
  pull(mediaId: MediaId, requestId: RequestId | undefined): Promise<void>;
  /** The socket closed: abort every upload in flight. */
  dropAll(): void;
}

interface Upload {
  meta: ClientPayloads["media.upload.start"];
  received: number;
  hash: Hash;
  writer: MediaWriter;
}

/** Refuse an upload start that is malformed, too large, a duplicate or over the per-connection limit. */
async function checkUploadStart(
  services: MediaServices,
  session: MediaSession,
  meta: ClientPayloads["media.upload.start"],
  uploads: ReadonlyMap<string, Upload>,
): Promise<void> {
  if (meta.size < 0) throw new GatewayError("unsupported", `field "size": must not be negative`);
  if (meta.size > services.options.maxMediaBytes) {
    throw new GatewayError(
      "media_too_large",
      `media "${meta.media_ref}" is ${meta.size} bytes; the limit is ${services.options.maxMediaBytes}`,
    );
  }
  if (!meta.media_ref) throw new GatewayError("unsupported", `field "media_ref": must not be empty`);
  if (!mediaTypeEssence(meta.mime)) {
    throw new GatewayError(
      "unsupported",
      `field "mime": must be a media type "type/subtype" (optional "; name=value" parameters), at most ${MEDIA_TYPE_MAX_LENGTH} characters, no control characters`,
    );
  }
  if (uploads.has(meta.media_ref) || (await services.storage.getMedia(session.owner, meta.media_ref))) {
    throw new GatewayError("unsupported", `media_ref "${meta.media_ref}" is already in flight or uploaded`);
  }
  if (uploads.size >= services.options.maxUploadsPerConnection) {
    throw new GatewayError(
      "rate_limited",
      `too many uploads in flight (at most ${services.options.maxUploadsPerConnection})`,
    );
  }
}

/** Stream one stored media file to the device in chunks, free its pull slot, then report with media.pull.end. */
async function streamPull(
  services: MediaServices,
  session: MediaSession,
  media: MediaStore,
  mediaId: MediaId,
  requestId: RequestId | undefined,
  release: () => void,
): Promise<void> {
  let offset = 0;
  let ok = true;
  try {
    // Each chunk waits for the socket to drain, so a device that stops reading holds at most one chunk per pull.
    pieces: for await (const piece of media.read(session.owner, mediaId)) {
      for (let at = 0; at < piece.byteLength; at += LIMITS.mediaChunkBytes) {
        if (!(await session.drained())) break pieces;
        const bytes = piece.subarray(at, Math.min(piece.byteLength, at + LIMITS.mediaChunkBytes));
        session.sendBinary(encodeChunk(mediaId, offset, bytes));
        offset += bytes.byteLength;
      }
    }
  } catch (error) {
    ok = false;
    services.log.warn(`media pull of ${mediaId} failed`, error);
  } finally {
    release();
  }
  session.send({ type: "media.pull.end", payload: { ok, media_id: mediaId } }, requestId);
}

/** Why a chunk cannot extend its upload (too big, out of order, past the declared size), if it cannot. */
function chunkProblem(
  chunk: { media: string; offset: number; bytes: Uint8Array },
  upload: Upload,
): GatewayError | undefined {
  if (chunk.bytes.byteLength > LIMITS.mediaChunkBytes) {
    return new GatewayError(
      "media_too_large",
      `media "${chunk.media}": a chunk of ${chunk.bytes.byteLength} bytes is over the ${LIMITS.mediaChunkBytes} a chunk may carry; upload dropped`,
    );
  }
  if (chunk.offset !== upload.received) {
    return new GatewayError(
      "unsupported",
      `media "${chunk.media}": chunk at offset ${chunk.offset}, expected ${upload.received}; upload dropped`,
    );
  }
  if (upload.received + chunk.bytes.byteLength > upload.meta.size) {
    return new GatewayError(
      "media_too_large",
      `media "${chunk.media}": more bytes than the declared size ${upload.meta.size}; upload dropped`,
    );
  }
  return undefined;
}

/** Keep a verified upload: commit its bytes and record it, or leave neither behind. */
async function commitUpload(
  services: MediaServices,
  session: MediaSession,
  upload: Upload,
  digest: string,
): Promise<void> {
  const media_ref = upload.meta.media_ref;
  try {
    await upload.writer.commit();
    const record: MediaRecord = {
      media_id: media_ref,
      kind: upload.meta.kind,
      mime: upload.meta.mime,
      size: upload.received,
      filename: upload.meta.filename,
      owner: session.owner,
      sha256: digest,
      created_ts: services.now(),
    };
    await services.storage.putMedia(session.owner, record);
  } catch (error) {
    await upload.writer.abort().catch(() => undefined);
    await services.options.mediaStore?.delete(session.owner, [media_ref]).catch(() => undefined);
    throw error;
  }
}

/** The gateway's media store, when both the gateway and this device take media. */
function usableMediaStore(services: MediaServices, session: MediaSession): MediaStore {
  const media = services.options.mediaStore;
  if (!media) throw new GatewayError("unsupported", "this gateway keeps no media");
  if (!session.caps.media) throw new GatewayError("unsupported", "this device declared caps.media false");
  return media;
}

/** Create the media state of one connection. */
export function createUploads(services: MediaServices, session: MediaSession): Uploads {
  const uploads = new Map<string, Upload>();
  let pulling = 0;

  const store = () => usableMediaStore(services, session);
  const drop = async (ref: string): Promise<void> => {
    const upload = uploads.get(ref);
    uploads.delete(ref);
    if (upload) await upload.writer.abort().catch((error) => services.log.warn("aborting an upload failed", error));
  };

  return {
    async start(meta) {
      const media = store();
      await checkUploadStart(services, session, meta, uploads);
      const writer = await media.createWriter(session.owner, meta.media_ref);
      uploads.set(meta.media_ref, { meta, received: 0, hash: createHash("sha256"), writer });
    },

    inFlight(data) {
      const chunk = readChunk(data);
      return !("problem" in chunk) && uploads.has(chunk.media);
    },

    async chunk(data) {
      const chunk = decodeChunk(data);
      const upload = uploads.get(chunk.media);
      if (!upload) throw new GatewayError("not_found", `no upload in flight for media_ref "${chunk.media}"`);
      const problem = chunkProblem(chunk, upload);
      if (problem) {
        await drop(chunk.media);
        throw problem;
      }
      upload.received += chunk.bytes.byteLength;
      upload.hash.update(chunk.bytes);
      try {
        await upload.writer.write(chunk.bytes);
      } catch (error) {
        await drop(chunk.media);
        throw error;
      }
    },

    async end({ media_ref, sha256 }, requestId) {
      const upload = uploads.get(media_ref);
      if (!upload) throw new GatewayError("not_found", `no upload in flight for media_ref "${media_ref}"`);
      uploads.delete(media_ref);
      const digest = upload.hash.digest("hex");
      if (upload.received !== upload.meta.size || digest !== sha256.toLowerCase()) {
        await upload.writer.abort();
        session.send({ type: "media.upload.ack", payload: { ok: false, media_ref } }, requestId);
        return;
      }
      await commitUpload(services, session, upload, digest);
      session.send({ type: "media.upload.ack", payload: { ok: true, media_ref } }, requestId);
    },

    async pull(mediaId, requestId) {
      const media = store();
      const most = services.options.maxPullsPerConnection;
      if (pulling >= most)
        throw new GatewayError(
          "rate_limited",
          `too many media pulls in flight (at most ${most}); wait for a media.pull.end`,
        );
      const record = await services.storage.getMedia(session.owner, mediaId);
      if (!record) throw new GatewayError("not_found", `unknown media_id "${mediaId}"`);
      pulling += 1;
      // Streamed in the background so a long download does not hold up this device's other requests.
      void streamPull(services, session, media, mediaId, requestId, () => {
        pulling -= 1;
      });
    },

    dropAll() {
      for (const ref of [...uploads.keys()]) void drop(ref);
    },
  };
}
