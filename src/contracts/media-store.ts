/**
 * The `MediaStore` contract: where media bytes live. Metadata lives in {@link Storage}. An
 * implementation of your own can check itself with `describeMediaStoreConformance` from
 * `chat-gateway/testing`.
 * @module
 */
import type { MediaId, Owner } from "../protocol/ids.js";
import type { Storage } from "./storage.js";

/** Receives one upload's bytes in order. Nothing is readable until {@link MediaWriter.commit}. */
export interface MediaWriter {
  /** Append a chunk. Resolves when the chunk is accepted (backpressure). */
  write(chunk: Uint8Array): Promise<void>;
  /** Make the bytes readable under the media id, durably. */
  commit(): Promise<void>;
  /** Drop everything written; idempotent, also after a failed write. */
  abort(): Promise<void>;
}

/**
 * Media bytes, streamed both ways so that no file is ever held in memory whole.
 * The default keeps files in a folder (`chat-gateway/media/fs`).
 */
export interface MediaStore {
  /** Start writing a new item. */
  createWriter(owner: Owner, mediaId: MediaId): Promise<MediaWriter>;
  /** Read an item in chunks of any size. Rejects (or throws on iteration) when it does not exist. */
  read(owner: Owner, mediaId: MediaId): AsyncIterable<Uint8Array>;
  /** Delete items; unknown ids are ignored. */
  delete(owner: Owner, mediaIds: MediaId[]): Promise<void>;
}

export type { Storage };
