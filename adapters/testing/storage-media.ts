/**
 * Conformance of the `media` capability (`getMedia`, `putMedia`, `deleteMedia`, and what `commit`
 * does with the media a message lists) when the storage declares it, and otherwise of the core's
 * stand-in and the gateway's refusal of a media store. Part of {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { MediaStore } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { createGateway } from "chat-gateway";
import { A, B, capabilityLabel, channel, ids, media, mediaRef, msg, thread } from "./storage-records.js";

/** Never called: the gateway refuses the configuration before it could be. */
const unusedMediaStore: MediaStore = {
  createWriter: () => Promise.reject(new Error("unused")),
  read: () => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error("unused")) }),
  }),
  delete: () => Promise.reject(new Error("unused")),
};

/** Declares the media tests; `current` gives the storage of the running test. */
export function describeMediaConformance(current: () => Storage, native: boolean): void {
  if (!native) return describeMediaAbsent(current);
  describeMediaRecords(current);
  describeMediaAttachment(current);
}

/** Without the capability: nothing kept, and no media store accepted. */
function describeMediaAbsent(current: () => Storage): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describe(capabilityLabel("media", false), () => {
    test("media - without it no metadata is kept, and createGateway refuses a media store naming the capability", async () => {
      expect(await storage.getMedia(A, "x1")).toBeUndefined();
      await expect(storage.putMedia(A, media(A, "x1"))).rejects.toMatchObject({ code: "unsupported" });
      await storage.deleteMedia(A, ["x1"]);
      const runtime = { async *turn() {} };
      expect(() => createGateway({ storage, runtime, mediaStore: unusedMediaStore })).toThrow(/media capability/);
      expect(() => createGateway({ storage, runtime })).not.toThrow();
    });
  });
}

/** Media metadata, and what deleting messages and channels does to it. */
function describeMediaRecords(current: () => Storage): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describe(capabilityLabel("media", true), () => {
    test("media - metadata stored, replaced, deleted, and invisible to other owners", async () => {
      await storage.putMedia(A, media(A, "x1"));
      await storage.putMedia(A, { ...media(A, "x1"), filename: "new.png", message_id: "m9" });
      expect(await storage.getMedia(A, "x1")).toEqual({ ...media(A, "x1"), filename: "new.png", message_id: "m9" });
      expect(await storage.getMedia(B, "x1")).toBeUndefined();
      await storage.deleteMedia(B, ["x1"]);
      expect(await storage.getMedia(A, "x1")).toBeDefined();
      await storage.deleteMedia(A, ["x1", "unknown"]);
      expect(await storage.getMedia(A, "x1")).toBeUndefined();
    });

    test("media - deleting messages reports their media and forgets its metadata", async () => {
      await storage.putMedia(A, media(A, "x1"));
      await storage.putMedia(A, media(A, "x2"));
      await storage.putMedia(A, media(A, "keep"));
      await storage.commit(A, {
        messages: [msg("m1", { media: [mediaRef("x1"), mediaRef("x2")] }), msg("m2", { media: [mediaRef("keep")] })],
      });
      const r = await storage.commit(A, { deleteMessages: ["m1", "unknown"] });
      expect(r.orphanedMedia.sort()).toEqual(["x1", "x2"]);
      expect(await storage.getMessage(A, "m1")).toBeUndefined();
      expect(await storage.getMedia(A, "x1")).toBeUndefined();
      expect(await storage.getMedia(A, "x2")).toBeUndefined();
      expect(await storage.getMedia(A, "keep")).toEqual({ ...media(A, "keep"), message_id: "m2" });
      expect(ids((await storage.history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m2"]);
      expect(await storage.commit(A, { deleteMessages: ["m1"] })).toEqual({ seqs: [], orphanedMedia: [] });
    });

    test("media - deleting a channel removes its messages and those of the listed threads, and reports their media", async () => {
      await storage.putMedia(A, media(A, "x-flat"));
      await storage.putMedia(A, media(A, "x-thread"));
      await storage.putMedia(A, media(A, "x-other"));
      await storage.commit(A, {
        channels: [channel("c1"), thread("t1", "c1"), thread("t2", "c1"), channel("c2")],
        messages: [
          msg("flat", { media: [mediaRef("x-flat")], text: "doomed words" }),
          msg("in-t1", { thread_id: "t1", media: [mediaRef("x-thread")], text: "doomed words" }),
          msg("in-t2", { thread_id: "t2", text: "doomed words" }),
          msg("other", { chat_id: "c2", media: [mediaRef("x-other")], text: "doomed words" }),
        ],
      });
      const r = await storage.commit(A, {
        deleteChannels: ["c1", "t1", "t2"],
        outbox: [{ type: "channel.deleted", payload: { chat_id: "c1" } }],
      });
      expect(r.seqs).toEqual([1]);
      expect(r.orphanedMedia.sort()).toEqual(["x-flat", "x-thread"]);
      expect((await storage.listChannels(A)).map((c) => c.chat_id)).toEqual(["c2"]);
      for (const id of ["flat", "in-t1", "in-t2"]) expect(await storage.getMessage(A, id)).toBeUndefined();
      expect(await storage.getMessage(A, "other")).toBeDefined();
      expect(await storage.getMedia(A, "x-flat")).toBeUndefined();
      expect(await storage.getMedia(A, "x-thread")).toBeUndefined();
      expect(await storage.getMedia(A, "x-other")).toBeDefined();
      expect(ids(await storage.search(A, { query: "doomed", scope: "all", limit: 10 }))).toEqual(["other"]);
      expect((await storage.history(A, { chat_id: "c1", thread_id: "t1", limit: 10 }))!.messages).toEqual([]);
    });
  });
}

/** A message holds its media: attaching it elsewhere is refused. */
function describeMediaAttachment(current: () => Storage): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describe(capabilityLabel("media", true), () => {
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
          storage.commit(A, {
            ...refused,
            channels: [channel("c-new")],
            outbox: [{ type: "message", payload: { message_id: "m2" } }],
          }),
        ).rejects.toMatchObject({ code: "unsupported" });
      }
      await storage.putMedia(A, media(A, "x2"));
      await expect(
        storage.commit(A, {
          messages: [msg("m4", { media: [mediaRef("x2")] }), msg("m5", { media: [mediaRef("x2")] })],
        }),
      ).rejects.toMatchObject({
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
}
