/**
 * Conformance of the `adoptOwner` capability: one owner's data moved whole to another, refused
 * into an owner that has data, a no-op the second time; without it, a clear refusal. Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway";
import { A, B, capabilityLabel, channel, device, ids, media, mediaRef, msg, thread } from "./storage-records.js";

const NOTHING = { channels: 0, messages: 0, outbox: 0, media: 0 };
/** A push target registered while login was off: never the adopting owner's. */
const PLANTED = { ntfy_topic: "planted-topic", caps: { min_protocol: 1, media: true, push: "ntfy" as const, streaming: true } };

/** Gives owner A two chats, a thread, messages (one holding media), a redacted frame and a device with a push target. */
async function fillOwnerA(storage: Storage, withMedia: boolean): Promise<void> {
  if (withMedia) await storage.putMedia(A, media(A, "x1"));
  await storage.commit(A, {
    channels: [channel("c1"), thread("t1", "c1"), channel("c2")],
    messages: [
      msg("m1", { text: "quokka picnic", media: withMedia ? [mediaRef("x1")] : [] }),
      msg("m2", { thread_id: "t1", text: "quokka thread" }),
      msg("m3", { chat_id: "c2", text: "gone soon" }),
    ],
    outbox: [
      { type: "message.new", payload: { message_id: "m1" } },
      { type: "message.new", payload: { message_id: "m2" } },
      { type: "message.new", payload: { message_id: "m3" } },
    ],
  });
  await storage.commit(A, { deleteMessages: ["m3"], outbox: [{ type: "message.deleted", payload: { message_ids: ["m3"] } }] });
  await storage.putDevice(A, device("d1", PLANTED));
}

/** Declares the adoption tests; `current` gives the storage of the running test. */
export function describeAdoptionConformance(current: () => Storage, native: boolean, withMedia: boolean): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  if (!native) {
    describe(capabilityLabel("adoptOwner", false, "refused"), () => {
      test("adoptOwner - without it the call is refused with unsupported and nothing moves", async () => {
        await fillOwnerA(storage, withMedia);
        await expect(storage.adoptOwner(A, B)).rejects.toMatchObject({ code: "unsupported" });
        expect(ids((await storage.history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
      });
    });
    return;
  }

  describe(capabilityLabel("adoptOwner", true), () => {
    test("adoptOwner - moves channels, messages, outbox and seqs, and media; devices and their push targets stay with the old owner", async () => {
      await fillOwnerA(storage, withMedia);
      const before = { channels: await storage.listChannels(A), outbox: await storage.readOutbox(A, 0, 100), bounds: await storage.outboxBounds(A) };
      expect(await storage.adoptOwner(A, B)).toEqual({ channels: 3, messages: 2, outbox: 3, media: withMedia ? 1 : 0 });
      const byId = (list: Array<{ chat_id: string }>) => [...list].sort((x, y) => x.chat_id.localeCompare(y.chat_id));
      expect(byId(await storage.listChannels(B))).toEqual(byId(before.channels));
      expect(ids((await storage.history(B, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
      expect(ids((await storage.history(B, { chat_id: "c1", thread_id: "t1", limit: 10 }))!.messages)).toEqual(["m2"]);
      expect((await storage.getMessage(B, "m1"))?.text).toBe("quokka picnic");
      expect(await storage.readOutbox(B, 0, 100)).toEqual(before.outbox);
      expect(await storage.outboxBounds(B)).toEqual(before.bounds);
      expect(await storage.listDevices(B)).toEqual([]);
      expect(ids(await storage.search(B, { query: "quokka", scope: "chat", chat_id: "c1", limit: 10 })).sort()).toEqual(["m1", "m2"]);
      if (withMedia) expect(await storage.getMedia(B, "x1")).toEqual({ ...media(B, "x1"), message_id: "m1" });

      expect(await storage.listChannels(A)).toEqual([]);
      expect(await storage.getMessage(A, "m1")).toBeUndefined();
      expect(await storage.readOutbox(A, 0, 100)).toEqual([]);
      expect(await storage.listDevices(A)).toEqual([device("d1", PLANTED)]);
      expect(await storage.search(A, { query: "quokka", scope: "all", limit: 10 })).toEqual([]);
      if (withMedia) expect(await storage.getMedia(A, "x1")).toBeUndefined();
      // Both owners go on numbering after the frames given out: no seq is ever reused.
      expect((await storage.commit(B, { outbox: [{ type: "message.new", payload: {} }] })).seqs).toEqual([5]);
      expect((await storage.commit(A, { outbox: [{ type: "message.new", payload: {} }] })).seqs).toEqual([5]);
    });

    test("adoptOwner - refused into an owner that has data of its own, and nothing moves", async () => {
      await fillOwnerA(storage, withMedia);
      await storage.putDevice(B, device("d9"));
      await expect(storage.adoptOwner(A, B)).rejects.toMatchObject({ code: "unsupported", message: expect.stringContaining("already has data") });
      expect((await storage.listDevices(B)).map((d) => d.device_id)).toEqual(["d9"]);
      expect(await storage.listChannels(B)).toEqual([]);
      expect((await storage.listChannels(A)).length).toBe(3);
      expect(ids((await storage.history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
      expect((await storage.search(A, { query: "quokka", scope: "all", limit: 10 })).length).toBe(2);
      expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 4 });
    });

    test("adoptOwner - an owner whose seqs were given out counts as having data, even with its frames pruned", async () => {
      await fillOwnerA(storage, withMedia);
      await storage.commit(B, { outbox: [{ type: "message.new", payload: {} }] });
      await storage.pruneOutbox(B, { maxFrames: 0, maxAgeMs: 86_400_000 }, Date.now());
      await expect(storage.adoptOwner(A, B)).rejects.toMatchObject({ code: "unsupported" });
      expect((await storage.listChannels(A)).length).toBe(3);
    });

    test("adoptOwner - a second run, or an owner with nothing, moves nothing and resolves zeros", async () => {
      await fillOwnerA(storage, withMedia);
      await storage.adoptOwner(A, B);
      expect(await storage.adoptOwner(A, B)).toEqual(NOTHING);
      expect((await storage.listChannels(B)).length).toBe(3);
      expect(await storage.adoptOwner("nobody", "someone")).toEqual(NOTHING);
      expect(await storage.listChannels("someone")).toEqual([]);
    });

    test("adoptOwner - an owner cannot adopt itself", async () => {
      await fillOwnerA(storage, withMedia);
      await expect(storage.adoptOwner(A, A)).rejects.toMatchObject({ code: "unsupported" });
      expect((await storage.listChannels(A)).length).toBe(3);
    });
  });
}
