/**
 * Media transfers of a client: uploads in 256 KiB chunks checked by sha256, at most a few at
 * once, and downloads with `media.pull` assembled from the binary chunks that answer it.
 * @module
 */
import type { MediaKind, MediaRef } from "chat-gateway";
import { OPEN, type Connection } from "./connection.js";
import type { WebSocketLike } from "./socket.js";
import { ClientError } from "./errors.js";
import { CHUNK_BYTES, decodeMediaChunk, encodeMediaChunk, kindOf, randomId, sha256Hex, toBytes } from "./media.js";
import { MIN_BULK_TIMEOUT_MS, type GatewayClientOptions, type RequestOptions } from "./options.js";
import type { Requests } from "./requests.js";
import type { ResponsePayload } from "chat-gateway/protocol";

/** What {@link GatewayClient.upload} needs besides the bytes. */
export interface UploadOptions extends RequestOptions {
  /** MIME type (default from a Blob's type, else `application/octet-stream`). */
  mime?: string;
  /** Protocol media kind (default from the MIME type). */
  kind?: MediaKind;
  /** File name (default from a File's name, else "file"). */
  filename?: string;
  /** Called as chunks leave: bytes sent so far and the total. */
  onProgress?: (sent: number, total: number) => void;
}

/** A finished download. */
export interface Download {
  media_id: string;
  bytes: Uint8Array;
  /** Hex sha256 of `bytes`, computed with WebCrypto. */
  sha256: string;
}

/** What {@link GatewayClient.download} takes besides the media id. */
export interface DownloadOptions extends RequestOptions {
  /** Called as chunks arrive: bytes received so far. */
  onProgress?: (received: number) => void;
  /**
   * The size the media was offered with (`media.offer`, a message's media ref). Default: the size
   * of the last `media.offer` this client saw for the id, else `hello.ok.limits.max_media_bytes`.
   * More bytes fail the download; with a known size, fewer do too.
   */
  size?: number;
  /** Hex sha256 the bytes must have; another digest fails the download. */
  sha256?: string;
}

interface ActiveDownload {
  chunks: Uint8Array[];
  received: number;
  /** Most bytes accepted. */
  limit: number;
  onProgress?: (received: number) => void;
  /** Ends the download with an error; set once it failed. */
  fail(error: ClientError): void;
  failed: boolean;
}

/** Offered sizes remembered for downloads; the oldest is forgotten past this many. */
const OFFERS_KEPT = 1024;

/** The upload's `media.upload.start` error, once the gateway refused it. */
interface StartState {
  failure: ClientError | undefined;
}

/** Uploads and downloads of one client. */
export class Transfers {
  readonly #connection: Connection;
  readonly #requests: Requests;
  readonly #options: GatewayClientOptions;
  readonly #downloads = new Map<string, ActiveDownload>();
  readonly #offered = new Map<string, number>();
  #uploading = 0;
  #uploadQueue: Array<() => void> = [];

  /** Transfers use the connection's current socket and the client's request ids. */
  constructor(connection: Connection, requests: Requests, options: GatewayClientOptions) {
    this.#connection = connection;
    this.#requests = requests;
    this.#options = options;
  }

  /** Upload, waiting while `maxConcurrentUploads` are in flight; see {@link GatewayClient.upload}. */
  async upload(data: Blob | ArrayBuffer | ArrayBufferView, options: UploadOptions = {}): Promise<MediaRef> {
    // The gateway refuses more uploads in flight per connection than its limit (rate_limited).
    const max = Math.max(1, this.#options.maxConcurrentUploads ?? 4);
    if (this.#uploading >= max) await new Promise<void>((resolve) => this.#uploadQueue.push(resolve));
    this.#uploading++;
    try {
      return await this.#upload(data, options);
    } finally {
      this.#uploading--;
      this.#uploadQueue.shift()?.();
    }
  }

  /** Remembers the size a `media.offer` gave, to bound its download. */
  noteOffer(mediaId: string, size: number): void {
    this.#offered.delete(mediaId);
    this.#offered.set(mediaId, size);
    if (this.#offered.size > OFFERS_KEPT) this.#offered.delete(this.#offered.keys().next().value!);
  }

  /** Download one media id; see {@link GatewayClient.download}. */
  async download(mediaId: string, options: DownloadOptions = {}): Promise<Download> {
    if (this.#downloads.has(mediaId))
      throw new ClientError("unsupported", `media ${mediaId} is already being downloaded`, "media.pull");
    const size = options.size ?? this.#offered.get(mediaId);
    let fail!: (error: ClientError) => void;
    const failure = new Promise<never>((_, reject) => (fail = reject));
    const limit = size ?? this.#connection.helloOk?.limits.max_media_bytes ?? Number.MAX_SAFE_INTEGER;
    const active: ActiveDownload = {
      chunks: [],
      received: 0,
      limit,
      onProgress: options.onProgress,
      failed: false,
      fail: (e) => {
        active.failed = true;
        fail(e);
      },
    };
    this.#downloads.set(mediaId, active);
    try {
      const pull = this.#requests.request(
        "media.pull",
        { media_id: mediaId },
        options.timeoutMs ?? this.#bulkTimeout(),
      );
      // A failed download stops waiting at once; the pull's own end or timeout is then of no interest.
      pull.catch(() => undefined);
      const end = await Promise.race([pull, failure]);
      if (!end.ok)
        throw new ClientError("download_failed", `the gateway could not read media ${mediaId}`, "media.pull");
      if (size !== undefined && active.received !== size)
        throw downloadFailed(mediaId, `${active.received} bytes arrived of the ${size} offered`);
      const bytes = new Uint8Array(active.received);
      let at = 0;
      for (const chunk of active.chunks) {
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      const sha256 = await sha256Hex(bytes);
      if (options.sha256 !== undefined && sha256 !== options.sha256.toLowerCase())
        throw downloadFailed(mediaId, `its sha256 is ${sha256}, not ${options.sha256}`);
      return { media_id: mediaId, bytes, sha256 };
    } finally {
      this.#downloads.delete(mediaId);
    }
  }

  /** A binary message: the next chunk of a download in progress, else ignored. */
  onBinary(bytes: Uint8Array): void {
    const chunk = decodeMediaChunk(bytes);
    if (!chunk) return;
    const active = this.#downloads.get(chunk.media);
    if (!active || active.failed) return;
    // The gateway sends a download's chunks in order, back to back; anything else is not that media.
    if (chunk.offset !== active.received)
      return active.fail(
        downloadFailed(chunk.media, `a chunk at offset ${chunk.offset} came where ${active.received} was next`),
      );
    if (active.received + chunk.bytes.byteLength > active.limit)
      return active.fail(downloadFailed(chunk.media, `more than the ${active.limit} bytes it may have arrived`));
    // Copy: the chunk may share a buffer that the socket reuses.
    active.chunks.push(chunk.bytes.slice());
    active.received += chunk.bytes.byteLength;
    active.onProgress?.(active.received);
  }

  #bulkTimeout(): number {
    return Math.max(this.#requests.defaultTimeoutMs, MIN_BULK_TIMEOUT_MS);
  }

  async #upload(data: Blob | ArrayBuffer | ArrayBufferView, options: UploadOptions): Promise<MediaRef> {
    const bytes = await toBytes(data);
    const blob = typeof Blob !== "undefined" && data instanceof Blob ? data : undefined;
    const mime = options.mime || blob?.type || "application/octet-stream";
    const filename = options.filename ?? ((blob as { name?: string } | undefined)?.name || "file");
    const kind = options.kind ?? kindOf(mime);
    const sha256 = await sha256Hex(bytes);
    const timeoutMs = options.timeoutMs ?? this.#bulkTimeout();
    await this.#connection.waitReady(timeoutMs);
    const limit = this.#connection.helloOk?.limits.max_media_bytes;
    if (limit !== undefined && bytes.byteLength > limit) {
      throw new ClientError(
        "media_too_large",
        `${filename} is ${bytes.byteLength} bytes; the gateway takes at most ${limit}`,
        "media.upload.start",
      );
    }
    const mediaRef = randomId("u");
    const ws = this.#connection.socket!;
    // media.upload.start has no success response; only an error carries its id.
    const startId = this.#requests.newId();
    const start: StartState = { failure: undefined };
    const started = this.#requests.track(startId, "media.upload.start", undefined);
    started.catch((error: ClientError) => {
      start.failure = error;
    });
    ws.send(
      JSON.stringify({
        type: "media.upload.start",
        id: startId,
        payload: { media_ref: mediaRef, kind, mime, size: bytes.byteLength, filename },
      }),
    );
    try {
      await this.#sendChunks(ws, mediaRef, bytes, start, options.onProgress);
      let ack: ResponsePayload<"media.upload.end">;
      try {
        ack = await this.#requests.request("media.upload.end", { media_ref: mediaRef, sha256 }, timeoutMs);
      } catch (error) {
        // A refused start makes the end fail too ("no upload in flight"): report the cause.
        throw start.failure ?? error;
      }
      if (start.failure) throw start.failure;
      if (!ack.ok)
        throw new ClientError(
          "upload_failed",
          `the gateway refused upload ${mediaRef}: size or sha256 did not match`,
          "media.upload.end",
        );
      return { media_id: ack.media_ref, kind, mime, size: bytes.byteLength, filename };
    } finally {
      this.#requests.settle(startId);
    }
  }

  async #sendChunks(
    ws: WebSocketLike,
    mediaRef: string,
    bytes: Uint8Array,
    start: StartState,
    onProgress: UploadOptions["onProgress"],
  ): Promise<void> {
    let offset = 0;
    onProgress?.(0, bytes.byteLength);
    while (offset < bytes.byteLength) {
      if (start.failure) throw start.failure;
      if (this.#connection.socket !== ws)
        throw new ClientError("disconnected", "the connection dropped during the upload", "media.upload.start");
      const piece = bytes.subarray(offset, Math.min(bytes.byteLength, offset + CHUNK_BYTES));
      ws.send(encodeMediaChunk(mediaRef, offset, piece));
      offset += piece.byteLength;
      await this.#drain(ws);
      onProgress?.(offset, bytes.byteLength);
    }
    if (start.failure) throw start.failure;
  }

  /** Wait while the socket holds more than a few chunks, so a large upload does not fill memory. */
  async #drain(ws: WebSocketLike): Promise<void> {
    while (ws.bufferedAmount > 4 * CHUNK_BYTES && ws.readyState === OPEN && this.#connection.socket === ws) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

function downloadFailed(mediaId: string, why: string): ClientError {
  return new ClientError("download_failed", `download of media ${mediaId} failed: ${why}`, "media.pull");
}
