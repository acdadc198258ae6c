/**
 * Conformance of deletions (see the `Change` type of `chat-gateway`): media held by one message, and the
 * redaction of outbox frames that show deleted messages and channels. Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway";
import { A, B, channel, media, mediaRef, msg, thread } from "./storage-records.js";

/** Declares the deletion tests; `current` gives the storage of the running test. */
export function describeDeletionConformance(current: () => Storage): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describe("media attachment", () => {
    test("media attachment - a message holds its media; attaching it to another message is refused and applies nothing", async () => {
      await storage.putMedia(A, media(A, "x1"));
      await storage.putMedia(A, { ...media(A, "from-agent"), message_id: "a1" });
      await storage.commit(A, { messages: [msg("m1", { media: [mediaRef("x1")] })] });
      expect(await storage.getMedia(A, "x1")).toEqual({ ...media(A, "x1"), message_id: "m1" });
      // The holder itself may be stored again (a checkpoint, a final save).
      await storage.commit(A, { messages: [msg("m1", { media: [mediaRef("x1")], text: "again" })] });
      const before = await storage.outboxBounds(A);
      for (const refused of [
        { messages: [msg("m2", { media: [mediaRef("x1")] })] },
        { messages: [msg("m3", { media: [mediaRef("from-agent")] })] },
      ]) {
        await expect(
          storage.commit(A, { ...refused, channels: [channel("c-new")], outbox: [{ type: "message", payload: { message_id: "m2" } }] }),
        ).rejects.toMatchObject({ code: "unsupported" });
      }
      await storage.putMedia(A, media(A, "x2"));
      await expect(storage.commit(A, { messages: [msg("m4", { media: [mediaRef("x2")] }), msg("m5", { media: [mediaRef("x2")] })] })).rejects.toMatchObject({
        code: "unsupported",
      });
      for (const id of ["m2", "m3", "m4", "m5"]) expect(await storage.getMessage(A, id)).toBeUndefined();
      expect(await storage.getChannel(A, "c-new")).toBeUndefined();
      expect(await storage.outboxBounds(A)).toEqual(before);
      expect(await storage.getMedia(A, "x2")).toEqual(media(A, "x2"));
      expect((await storage.getMessage(A, "m1"))?.text).toBe("again");
      // Another owner's message may use the same id: media is per owner.
      await storage.putMedia(B, media(B, "x1"));
      await storage.commit(B, { messages: [msg("m2", { media: [mediaRef("x1")] })] });
      expect(await storage.getMedia(B, "x1")).toEqual({ ...media(B, "x1"), message_id: "m2" });
    });

    test("media attachment - deleting a message leaves media that another message holds", async () => {
      // Shared refs can only exist in data stored before the rule; the holder keeps its media.
      await storage.commit(A, { messages: [msg("old", { media: [mediaRef("x1")] })] });
      await storage.putMedia(A, media(A, "x1"));
      await storage.commit(A, { messages: [msg("holder", { media: [mediaRef("x1")] })] });
      const r = await storage.commit(A, { deleteMessages: ["old"] });
      expect(r.orphanedMedia).toEqual([]);
      expect(await storage.getMedia(A, "x1")).toEqual({ ...media(A, "x1"), message_id: "holder" });
      expect((await storage.commit(A, { deleteMessages: ["holder"] })).orphanedMedia).toEqual(["x1"]);
      expect(await storage.getMedia(A, "x1")).toBeUndefined();
    });
  });

  describe("requireMessages", () => {
    test("requireMessages - a change applies only while every required message exists; otherwise nothing of it", async () => {
      await storage.commit(A, { messages: [msg("m1", { role: "assistant", status: "streaming", text: "" })] });
      const saved = await storage.commit(A, {
        messages: [msg("m1", { role: "assistant", status: "complete", text: "final" })],
        outbox: [{ type: "message.stop", payload: { message_id: "m1", text: "final" } }],
        requireMessages: ["m1"],
      });
      expect(saved.seqs).toEqual([1]);
      expect(saved.skipped).toBeFalsy();
      await storage.commit(A, { deleteMessages: ["m1"] });
      const late = await storage.commit(A, {
        channels: [channel("c-late")],
        messages: [msg("m1", { role: "assistant", status: "complete", text: "back again" })],
        outbox: [{ type: "message.stop", payload: { message_id: "m1", text: "back again" } }],
        requireMessages: ["m1"],
      });
      expect(late).toEqual({ seqs: [], orphanedMedia: [], skipped: true });
      expect(await storage.getMessage(A, "m1")).toBeUndefined();
      expect(await storage.getChannel(A, "c-late")).toBeUndefined();
      expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 1 });
      expect(JSON.stringify(await storage.readOutbox(A, 0, Infinity))).not.toContain("back again");
      // Another owner's message of the same id does not count.
      await storage.commit(B, { messages: [msg("m1")] });
      expect((await storage.commit(A, { messages: [msg("m1")], requireMessages: ["m1"] })).skipped).toBe(true);
    });
  });

  describe("redaction", () => {
    const texts = async (owner: string) => JSON.stringify(await storage.readOutbox(owner, 0, Infinity));

    test("redaction - deleting messages redacts their stored frames; seqs and bounds stay", async () => {
      await storage.commit(A, {
        messages: [msg("m1", { text: "secret one" }), msg("m2", { text: "kept two" })],
        outbox: [
          { type: "message", payload: { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one" } },
          { type: "message", payload: { message_id: "m2", chat_id: "c1", thread_id: null, text: "kept two" } },
          { type: "message.stop", payload: { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one", status: "complete" } },
          { type: "media.offer", payload: { message_id: "m1", media_id: "x1", filename: "secret.png", chat_id: "c1", thread_id: null } },
          { type: "notification", payload: { kind: "generic", title: "t", body: "b", ts: 1 } },
        ],
      });
      await storage.commit(B, { outbox: [{ type: "message", payload: { message_id: "m1", text: "bob's own" } }] });
      const r = await storage.commit(A, {
        deleteMessages: ["m1"],
        outbox: [{ type: "message.deleted", payload: { chat_id: "c1", thread_id: null, message_ids: ["m1"] } }],
      });
      expect(r.seqs).toEqual([6]);
      expect(await texts(A)).not.toContain("secret");
      const left = await storage.readOutbox(A, 0, Infinity);
      expect(left.map((e) => [e.seq, e.type])).toEqual([
        [2, "message"],
        [5, "notification"],
        [6, "message.deleted"],
      ]);
      expect(await storage.readOutbox(A, 2, 1)).toEqual([left[1]]);
      expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 6 });
      expect((await storage.commit(A, { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([7]);
      expect(await texts(B)).toContain("bob's own");
    });

    test("redaction - deleting a channel redacts the frames of its messages, its threads' messages, the channels themselves and notices about them", async () => {
      await storage.commit(A, {
        channels: [channel("c1"), thread("t1", "c1"), channel("c2")],
        messages: [msg("flat", { text: "secret flat" }), msg("in-t1", { thread_id: "t1", text: "secret thread" }), msg("other", { chat_id: "c2", text: "kept other" })],
        outbox: [
          { type: "channel.created", payload: { chat_id: "c1", name: "secret name" } },
          { type: "channel.renamed", payload: { chat_id: "t1", name: "secret thread name" } },
          { type: "message", payload: { message_id: "flat", chat_id: "c1", thread_id: null, text: "secret flat" } },
          { type: "message.stop", payload: { message_id: "in-t1", chat_id: "c1", thread_id: "t1", text: "secret thread" } },
          { type: "notification", payload: { kind: "generic", title: "secret notice", body: "b", ts: 1, chat_id: "c1", thread_id: "t1" } },
          { type: "notification", payload: { kind: "generic", title: "general notice", body: "b", ts: 1 } },
          { type: "channel.created", payload: { chat_id: "c2", name: "kept name" } },
          { type: "message", payload: { message_id: "other", chat_id: "c2", thread_id: null, text: "kept other" } },
        ],
      });
      await storage.commit(A, { deleteChannels: ["c1", "t1"], outbox: [{ type: "channel.deleted", payload: { chat_id: "c1" } }] });
      const all = await texts(A);
      expect(all).not.toContain("secret");
      expect((await storage.readOutbox(A, 0, Infinity)).map((e) => [e.seq, e.type])).toEqual([
        [6, "notification"],
        [7, "channel.created"],
        [8, "message"],
        [9, "channel.deleted"],
      ]);
      expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 9 });
    });

    test("redaction - pruning still drops redacted frames from the front", async () => {
      await storage.commit(A, {
        messages: [msg("m1")],
        outbox: [{ type: "message", payload: { message_id: "m1", text: "secret" } }, { type: "x", payload: {} }, { type: "x", payload: {} }],
      });
      await storage.commit(A, { deleteMessages: ["m1"] });
      await storage.pruneOutbox(A, { maxFrames: 1, maxAgeMs: Infinity }, Date.now());
      expect(await storage.outboxBounds(A)).toEqual({ first: 3, last: 3 });
      expect((await storage.readOutbox(A, 0, Infinity)).map((e) => e.seq)).toEqual([3]);
    });
  });
}
