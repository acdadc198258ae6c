/**
 * An in-memory {@link MediaStore} for tests and examples: the bytes live in the process and are
 * gone when it exits.
 *
 * ```ts
 * import { memoryMediaStore } from "chat-gateway/media/memory";
 * const media = memoryMediaStore();
 * ```
 * @module
 */
import { GatewayError } from "chat-gateway/protocol";
import type { MediaId, MediaStore, MediaWriter, Owner } from "chat-gateway";

/**
 * Create a {@link MediaStore} that keeps every item in memory. It behaves like the file store: an
 * item is readable only after `commit`, owners are isolated, and reading an unknown id rejects
 * with a `not_found` {@link GatewayError}.
 *
 * @example
 * ```ts
 * const media = memoryMediaStore();
 * const writer = await media.createWriter("alice", "m1");
 * await writer.write(new TextEncoder().encode("hello"));
 * await writer.commit();
 * for await (const chunk of media.read("alice", "m1")) console.log(chunk.byteLength);
 * ```
 */
export function memoryMediaStore(): MediaStore {
  const items = new Map<string, readonly Uint8Array[]>();
  const keyOf = (owner: Owner, mediaId: MediaId) => JSON.stringify([owner, mediaId]);

  return {
    async createWriter(owner: Owner, mediaId: MediaId): Promise<MediaWriter> {
      const key = keyOf(owner, mediaId);
      let chunks: Uint8Array[] = [];
      let state: "open" | "committed" | "aborted" = "open";
      return {
        async write(chunk: Uint8Array): Promise<void> {
          if (state !== "open") throw new Error(`media writer is ${state}; cannot write`);
          // A copy: the caller may reuse its buffer once the write resolves.
          chunks.push(chunk.slice());
        },
        async commit(): Promise<void> {
          if (state !== "open") throw new Error(`media writer is ${state}; cannot commit`);
          state = "committed";
          items.set(key, chunks);
        },
        async abort(): Promise<void> {
          if (state !== "open") return;
          state = "aborted";
          chunks = [];
        },
      };
    },

    read(owner: Owner, mediaId: MediaId): AsyncIterable<Uint8Array> {
      const key = keyOf(owner, mediaId);
      return {
        async *[Symbol.asyncIterator]() {
          const chunks = items.get(key);
          if (!chunks) throw new GatewayError("not_found", `media ${JSON.stringify(mediaId)} not found`);
          for (const chunk of chunks) yield chunk.slice();
        },
      };
    },

    async delete(owner: Owner, mediaIds: MediaId[]): Promise<void> {
      for (const mediaId of mediaIds) items.delete(keyOf(owner, mediaId));
    },
  };
}
