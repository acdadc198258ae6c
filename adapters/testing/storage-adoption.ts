/**
 * Conformance of the `adoptOwner` capability: one owner's data moved whole to another, refused
 * into an owner that has data, a no-op the second time; without it, a clear refusal. Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway/storage";
import { A, B, capabilityLabel, channel, device, ids, media, mediaRef, msg, thread } from "./storage-records.js";

const NOTHING = { channels: 0, messages: 0, outbox: 0, media: 0 };
/** A push target registered while login was off: never the adopting owner's. */
const PLANTED = {
  ntfy_topic: "planted-topic",
  caps: { min_protocol: 1, media: true, push: "ntfy" as const, streaming: true },
};

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
  await storage.commit(A, {
    deleteMessages: ["m3"],
    outbox: [{ type: "message.deleted", payload: { message_ids: ["m3"] } }],
  });
  await storage.putDevice(A, device("d1", PLANTED));
}

/** Declares the adoption tests; `current` gives the storage of the running test. */
export function describeAdoptionConformance(current: () => Storage, native: boolean, withMedia: boolean): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });
  const use = () => storage;

  if (!native) {
    describeAdoptionAbsent(use, withMedia);
    return;
  }
  describe(capabilityLabel("adoptOwner", true), () => {
    describeAdoptionMoves(use, withMedia);
    describeAdoptionRefusals(use, withMedia);
  });
}

/** Without the capability: a clear refusal, and the owner's data stays where it was. */
function describeAdoptionAbsent(use: () => Storage, withMedia: boolean): void {
  describe(capabilityLabel("adoptOwner", false, "refused"), () => {
    test("adoptOwner - without it the call is refused with unsupported and nothing moves", async () => {
      await fillOwnerA(use(), withMedia);
      await expect(use().adoptOwner(A, B)).rejects.toMatchObject({ code: "unsupported" });
      expect(ids((await use().history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
    });
  });
}

/** What an adoption moves, and what it leaves: everything the first time, nothing the second. */
function describeAdoptionMoves(use: () => Storage, withMedia: boolean): void {
  test("adoptOwner - moves channels, messages, outbox and seqs, and media; devices and their push targets stay with the old owner", async () => {
    await fillOwnerA(use(), withMedia);
    const before = {
      channels: await use().listChannels(A),
      outbox: await use().readOutbox(A, 0, 100),
      bounds: await use().outboxBounds(A),
    };
    expect(await use().adoptOwner(A, B)).toEqual({ channels: 3, messages: 2, outbox: 3, media: withMedia ? 1 : 0 });
    const byId = (list: Array<{ chat_id: string }>) => [...list].sort((x, y) => x.chat_id.localeCompare(y.chat_id));
    expect(byId(await use().listChannels(B))).toEqual(byId(before.channels));
    expect(ids((await use().history(B, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
    expect(ids((await use().history(B, { chat_id: "c1", thread_id: "t1", limit: 10 }))!.messages)).toEqual(["m2"]);
    expect((await use().getMessage(B, "m1"))?.text).toBe("quokka picnic");
    expect(await use().readOutbox(B, 0, 100)).toEqual(before.outbox);
    expect(await use().outboxBounds(B)).toEqual(before.bounds);
    expect(await use().listDevices(B)).toEqual([]);
    expect(ids(await use().search(B, { query: "quokka", scope: "chat", chat_id: "c1", limit: 10 })).sort()).toEqual([
      "m1",
      "m2",
    ]);
    if (withMedia) expect(await use().getMedia(B, "x1")).toEqual({ ...media(B, "x1"), message_id: "m1" });

    expect(await use().listChannels(A)).toEqual([]);
    expect(await use().getMessage(A, "m1")).toBeUndefined();
    expect(await use().readOutbox(A, 0, 100)).toEqual([]);
    expect(await use().listDevices(A)).toEqual([device("d1", PLANTED)]);
    expect(await use().search(A, { query: "quokka", scope: "all", limit: 10 })).toEqual([]);
    if (withMedia) expect(await use().getMedia(A, "x1")).toBeUndefined();
    // Both owners go on numbering after the frames given out: no seq is ever reused.
    expect((await use().commit(B, { outbox: [{ type: "message.new", payload: {} }] })).seqs).toEqual([5]);
    expect((await use().commit(A, { outbox: [{ type: "message.new", payload: {} }] })).seqs).toEqual([5]);
  });

  test("adoptOwner - a second run, or an owner with nothing, moves nothing and resolves zeros", async () => {
    await fillOwnerA(use(), withMedia);
    await use().adoptOwner(A, B);
    expect(await use().adoptOwner(A, B)).toEqual(NOTHING);
    expect((await use().listChannels(B)).length).toBe(3);
    expect(await use().adoptOwner("nobody", "someone")).toEqual(NOTHING);
    expect(await use().listChannels("someone")).toEqual([]);
  });
}

/** Adoptions refused, with nothing moved: into an owner with data (seqs given out count), or into itself. */
function describeAdoptionRefusals(use: () => Storage, withMedia: boolean): void {
  test("adoptOwner - refused into an owner that has data of its own, and nothing moves", async () => {
    await fillOwnerA(use(), withMedia);
    await use().putDevice(B, device("d9"));
    await expect(use().adoptOwner(A, B)).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringContaining("already has data"),
    });
    expect((await use().listDevices(B)).map((d) => d.device_id)).toEqual(["d9"]);
    expect(await use().listChannels(B)).toEqual([]);
    expect((await use().listChannels(A)).length).toBe(3);
    expect(ids((await use().history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
    expect((await use().search(A, { query: "quokka", scope: "all", limit: 10 })).length).toBe(2);
    expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 4 });
  });

  test("adoptOwner - an owner whose seqs were given out counts as having data, even with its frames pruned", async () => {
    await fillOwnerA(use(), withMedia);
    await use().commit(B, { outbox: [{ type: "message.new", payload: {} }] });
    await use().pruneOutbox(B, { maxFrames: 0, maxAgeMs: 86_400_000 }, Date.now());
    await expect(use().adoptOwner(A, B)).rejects.toMatchObject({ code: "unsupported" });
    expect((await use().listChannels(A)).length).toBe(3);
  });

  test("adoptOwner - an owner cannot adopt itself", async () => {
    await fillOwnerA(use(), withMedia);
    await expect(use().adoptOwner(A, A)).rejects.toMatchObject({ code: "unsupported" });
    expect((await use().listChannels(A)).length).toBe(3);
  });
}
