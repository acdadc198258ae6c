// The MediaStore conformance suite, exported by "chat-gateway/testing".
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { MediaStore } from "chat-gateway";

/**
 * Makes the media store for one test: called at the start of every test, it must return a fresh,
 * EMPTY store that shares no items with the ones it made before (a new folder, a new instance).
 */
export type MediaStoreFactory = () => MediaStore | Promise<MediaStore>;

/**
 * Declares, with vitest's `describe`/`it`, the conformance tests of the {@link MediaStore}
 * contract for one implementation, inside a `describe("MediaStore conformance: <name>")` block.
 * Call it at the top level of a test file:
 *
 * ```ts
 * import { describeMediaStoreConformance } from "chat-gateway/testing";
 * import { myMediaStore } from "./my-media-store.js";
 * describeMediaStoreConformance("my media store", () => myMediaStore());
 * ```
 *
 * What it checks:
 * - round trips: several MiB written in odd-sized chunks read back byte for byte, empty items,
 *   a writer's buffer reusable once a write resolves, any id string kept distinct;
 * - commit and abort: an item being written is not readable, a committed writer refuses further
 *   writes, an abort leaves nothing readable, is idempotent and does not disturb a committed item
 *   with the same id; reading an id never written fails;
 * - owners: the same id under two owners holds two items, and one owner can neither read nor
 *   delete another's; `delete` removes the named items, ignores unknown ids and keeps the rest;
 * - concurrency: interleaved writers never mix bytes, two readers of one item each get all of it,
 *   and a reader stopped early does not spoil later reads.
 *
 * @param name Shown in the test names, e.g. `"fs"`.
 * @param make Makes a fresh, empty store per test; see {@link MediaStoreFactory}.
 */
export function describeMediaStoreConformance(name: string, make: MediaStoreFactory): void {
  describe(`MediaStore conformance: ${name}`, () => {
    describeWritingAndReading(make);
    describeOwnersAndConcurrency(make);
  });
}

/** Round trips, ids, uncommitted and unknown items, aborts. */
function describeWritingAndReading(make: MediaStoreFactory): void {
  it("round trip - several MiB written in odd-sized chunks read back byte for byte", async () => {
    const store = await make();
    const bytes = pseudoRandomBytes(5 * 1024 * 1024 + 12_345, 1);
    await writeItem(store, "alice", "big", bytes, [1, 7, 65_537, 262_143, 3, 100_003]);
    const back = await readItem(store, "alice", "big");
    expect(back.byteLength).toBe(bytes.byteLength);
    expect(sha256(back)).toBe(sha256(bytes));
  });

  it("round trip - an empty item is readable and empty", async () => {
    const store = await make();
    const writer = await store.createWriter("alice", "empty");
    await writer.commit();
    expect((await readItem(store, "alice", "empty")).byteLength).toBe(0);
  });

  it("round trip - the writer's buffer may be reused once a write resolves", async () => {
    const store = await make();
    const writer = await store.createWriter("alice", "reuse");
    const buffer = new Uint8Array(4);
    for (const value of [1, 2, 3]) {
      buffer.fill(value);
      await writer.write(buffer);
    }
    await writer.commit();
    expect([...(await readItem(store, "alice", "reuse"))]).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
  });

  it("ids - any id string works and stays distinct", async () => {
    const store = await make();
    const ids = ["../../etc/passwd", "a/b\\c", "nul\u0000byte", "émoji 🎉", ".", "", "x".repeat(2000)];
    for (const [i, id] of ids.entries()) await writeItem(store, "alice", id, Uint8Array.of(i, i + 1));
    for (const [i, id] of ids.entries()) {
      expect([...(await readItem(store, "alice", id))]).toEqual([i, i + 1]);
    }
  });

  it("uncommitted - an item being written is not readable", async () => {
    const store = await make();
    const writer = await store.createWriter("alice", "pending");
    await writer.write(Uint8Array.of(1, 2, 3));
    await expectNotFound(store, "alice", "pending");
    await writer.commit();
    expect([...(await readItem(store, "alice", "pending"))]).toEqual([1, 2, 3]);
  });

  it("unknown - reading an id never written fails", async () => {
    const store = await make();
    await expectNotFound(store, "alice", "never-written");
  });

  it("abort - leaves nothing readable, is idempotent and closes the writer", async () => {
    const store = await make();
    const writer = await store.createWriter("alice", "aborted");
    await writer.write(pseudoRandomBytes(300_000, 2));
    await writer.abort();
    await writer.abort();
    await expectNotFound(store, "alice", "aborted");
    await expect(writer.write(Uint8Array.of(1))).rejects.toThrow();
    await expect(writer.commit()).rejects.toThrow();
  });

  it("abort - an aborted upload does not disturb a committed item with the same id", async () => {
    const store = await make();
    await writeItem(store, "alice", "kept", Uint8Array.of(9, 9));
    const writer = await store.createWriter("alice", "kept");
    await writer.write(Uint8Array.of(1));
    await writer.abort();
    expect([...(await readItem(store, "alice", "kept"))]).toEqual([9, 9]);
  });
}

/** Committed writers, owner isolation, deletes, concurrent writers and readers. */
function describeOwnersAndConcurrency(make: MediaStoreFactory): void {
  it("commit - a committed writer refuses further writes", async () => {
    const store = await make();
    const writer = await store.createWriter("alice", "done");
    await writer.write(Uint8Array.of(1));
    await writer.commit();
    await expect(writer.write(Uint8Array.of(2))).rejects.toThrow();
    await writer.abort();
    expect([...(await readItem(store, "alice", "done"))]).toEqual([1]);
  });

  it("owners - the same id under two owners holds two items", async () => {
    const store = await make();
    await writeItem(store, "alice", "shared-id", Uint8Array.of(1));
    await writeItem(store, "bob", "shared-id", Uint8Array.of(2));
    expect([...(await readItem(store, "alice", "shared-id"))]).toEqual([1]);
    expect([...(await readItem(store, "bob", "shared-id"))]).toEqual([2]);
  });

  it("owners - one owner can neither read nor delete another's item", async () => {
    const store = await make();
    await writeItem(store, "alice", "private", Uint8Array.of(7));
    await expectNotFound(store, "bob", "private");
    await store.delete("bob", ["private"]);
    expect([...(await readItem(store, "alice", "private"))]).toEqual([7]);
  });

  it("delete - removes the named items, ignores unknown ids and keeps the rest", async () => {
    const store = await make();
    for (const id of ["a", "b", "c"]) await writeItem(store, "alice", id, Uint8Array.of(1));
    await store.delete("alice", ["a", "unknown", "c"]);
    await store.delete("alice", []);
    await store.delete("alice", ["a"]);
    await expectNotFound(store, "alice", "a");
    await expectNotFound(store, "alice", "c");
    expect([...(await readItem(store, "alice", "b"))]).toEqual([1]);
  });

  it("concurrency - writers with different ids interleave without mixing bytes", async () => {
    const store = await make();
    const items = Array.from({ length: 6 }, (_, i) => ({
      id: `m${i}`,
      bytes: pseudoRandomBytes(200_000 + i * 777, 10 + i),
    }));
    const writers = await Promise.all(items.map((item) => store.createWriter("alice", item.id)));
    const chunk = 4_099;
    for (let offset = 0; offset < 210_000; offset += chunk) {
      await Promise.all(
        items.map((item, i) =>
          offset < item.bytes.byteLength ? writers[i].write(item.bytes.subarray(offset, offset + chunk)) : undefined,
        ),
      );
    }
    await Promise.all(writers.map((writer) => writer.commit()));
    for (const item of items) expect(sha256(await readItem(store, "alice", item.id))).toBe(sha256(item.bytes));
  });

  it("concurrency - two readers of one item each get all of it", async () => {
    const store = await make();
    const bytes = pseudoRandomBytes(1_000_000, 3);
    await writeItem(store, "alice", "twice", bytes);
    const [a, b] = await Promise.all([readItem(store, "alice", "twice"), readItem(store, "alice", "twice")]);
    expect(sha256(a)).toBe(sha256(bytes));
    expect(sha256(b)).toBe(sha256(bytes));
  });

  it("read - stopping early does not spoil later reads", async () => {
    const store = await make();
    const bytes = pseudoRandomBytes(1_000_000, 4);
    await writeItem(store, "alice", "partial", bytes);
    for await (const chunk of store.read("alice", "partial")) {
      expect(chunk.byteLength).toBeGreaterThan(0);
      break;
    }
    expect(sha256(await readItem(store, "alice", "partial"))).toBe(sha256(bytes));
  });
}

async function writeItem(
  store: MediaStore,
  owner: string,
  mediaId: string,
  bytes: Uint8Array,
  chunkSizes: number[] = [bytes.byteLength || 1],
): Promise<void> {
  const writer = await store.createWriter(owner, mediaId);
  let offset = 0;
  for (let i = 0; offset < bytes.byteLength; i++) {
    const size = chunkSizes[i % chunkSizes.length];
    await writer.write(bytes.subarray(offset, offset + size));
    offset += size;
  }
  await writer.commit();
}

async function readItem(store: MediaStore, owner: string, mediaId: string): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.read(owner, mediaId)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function expectNotFound(store: MediaStore, owner: string, mediaId: string): Promise<void> {
  await expect(readItem(store, owner, mediaId)).rejects.toMatchObject({ code: "not_found" });
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Deterministic bytes, so a failure reproduces; a xorshift generator is plenty for test data. */
function pseudoRandomBytes(length: number, salt: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = salt * 2_654_435_761 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
