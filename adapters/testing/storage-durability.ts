/**
 * Conformance of a storage that persists: what was written is read back whole by a new instance on
 * the same data after the first one closed, and seqs go on from where they were.
 * @module
 */
import { expect, test } from "vitest";
import type { Storage, StorageCapabilities } from "chat-gateway/storage";
import { A, channel, device, media, mediaRef, msg, thread } from "./storage-records.js";

/**
 * Declares the durability test. `reopen` makes a new instance on the running test's data (not yet
 * opened), or is undefined when the factory gave none.
 */
export function describeDurabilityConformance(
  use: () => Storage,
  reopen: () => Storage | undefined,
  capabilities: StorageCapabilities,
): void {
  test("durability - written, closed and opened again: every record and the outbox read back, and seqs go on", async () => {
    const again = reopen();
    if (!again)
      throw new Error(
        "the storage declares it persists ({ persists: true }) but its factory returned no `reopen`: return { storage, reopen: () => a new instance on the same data }",
      );
    const channels = [
      channel("default", { kind: "default", is_default: true }),
      channel("c1", { favorite: true, color: "#102030" }),
      thread("t1", "c1"),
    ];
    const withMedia = capabilities.media;
    const messages = [
      msg("m1", { chat_id: "default" }),
      msg("m2", { thread_id: "t1", media: withMedia ? [mediaRef("p1")] : [] }),
      msg("m3", { chat_id: "c1", text: "searchable zeppelin" }),
    ];
    if (withMedia) await use().putMedia(A, media(A, "p1"));
    await use().commit(A, {
      channels,
      messages,
      outbox: [
        { type: "channel.created", payload: { chat_id: "c1" } },
        { type: "message", payload: { message_id: "m1" } },
      ],
    });
    await use().commit(A, {
      deleteMessages: ["m1"],
      outbox: [{ type: "message.deleted", payload: { message_id: "m1" } }],
    });
    await use().putDevice(A, device("d1", { fcm_token: "f" }));
    const mark = { chat_id: "c1", thread_id: null, message_id: "m3", ts: messages[2].ts };
    if (capabilities.readState) await use().commit(A, { read: mark });
    await use().close();
    try {
      await again.open();
      expect((await again.listChannels(A)).sort((a, b) => a.chat_id.localeCompare(b.chat_id))).toEqual(
        [...channels].sort((a, b) => a.chat_id.localeCompare(b.chat_id)),
      );
      expect(await again.getMessage(A, "m1")).toBeUndefined();
      expect(await again.getMessage(A, "m2")).toEqual(messages[1]);
      expect((await again.history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages).toEqual([messages[2]]);
      expect((await again.search(A, { query: "zeppelin", scope: "all", limit: 5 })).map((h) => h.message_id)).toEqual([
        "m3",
      ]);
      expect((await again.readOutbox(A, 0, 10)).map((e) => [e.seq, e.type])).toEqual([
        [1, "channel.created"],
        [3, "message.deleted"],
      ]);
      expect(await again.listDevices(A)).toEqual([device("d1", { fcm_token: "f" })]);
      if (withMedia) expect(await again.getMedia(A, "p1")).toEqual({ ...media(A, "p1"), message_id: "m2" });
      if (capabilities.readState) {
        expect(await again.readMarks(A)).toEqual([mark]);
        expect((await again.commit(A, { read: mark })).skipped).toBe(true);
      }
      expect((await again.commit(A, { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([4]);
    } finally {
      await again.close();
    }
  });
}
