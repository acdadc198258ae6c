/**
 * Conformance of deletion: messages, channels and threads gone from every read, conditional
 * changes (`requireMessages`) and the redaction of outbox frames
 * that show deleted messages and channels (see the `Change` type of `chat-gateway`). Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway/storage";
import { A, B, channel, ids, msg, thread } from "./storage-records.js";

/** Declares the deletion tests; `current` gives the storage of the running test. */
export function describeDeletionConformance(current: () => Storage): void {
  describeRequireMessages(current);
  describeRedaction(current);
}

/** A conditional change applies whole or not at all. */
function describeRequireMessages(current: () => Storage): void {
  describe("requireMessages", () => {
    let storage: Storage;
    beforeEach(() => {
      storage = current();
    });

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
}

/** Deleting messages and channels redacts the outbox frames that show them. */
function describeRedaction(current: () => Storage): void {
  describe("redaction", () => {
    let storage: Storage;
    beforeEach(() => {
      storage = current();
    });
    const use = () => storage;

    describeMessageRedaction(use);
    describeChannelRedaction(use);
  });
}

/** An owner's whole outbox as text, to look for what redaction must have taken out. */
async function outboxText(storage: Storage, owner: string): Promise<string> {
  return JSON.stringify(await storage.readOutbox(owner, 0, Infinity));
}

/** Deleted messages: their frames go, every other frame keeps its seq. */
function describeMessageRedaction(use: () => Storage): void {
  test("redaction - deleting messages redacts their stored frames; seqs and bounds stay", async () => {
    await use().commit(A, {
      messages: [msg("m1", { text: "secret one" }), msg("m2", { text: "kept two" })],
      outbox: [
        { type: "message", payload: { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one" } },
        { type: "message", payload: { message_id: "m2", chat_id: "c1", thread_id: null, text: "kept two" } },
        {
          type: "message.stop",
          payload: { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one", status: "complete" },
        },
        {
          type: "media.offer",
          payload: { message_id: "m1", media_id: "x1", filename: "secret.png", chat_id: "c1", thread_id: null },
        },
        { type: "notification", payload: { kind: "generic", title: "t", body: "b", ts: 1 } },
      ],
    });
    await use().commit(B, { outbox: [{ type: "message", payload: { message_id: "m1", text: "bob's own" } }] });
    const r = await use().commit(A, {
      deleteMessages: ["m1"],
      outbox: [{ type: "message.deleted", payload: { chat_id: "c1", thread_id: null, message_ids: ["m1"] } }],
    });
    expect(r.seqs).toEqual([6]);
    expect(await outboxText(use(), A)).not.toContain("secret");
    const left = await use().readOutbox(A, 0, Infinity);
    expect(left.map((e) => [e.seq, e.type])).toEqual([
      [2, "message"],
      [5, "notification"],
      [6, "message.deleted"],
    ]);
    expect(await use().readOutbox(A, 2, 1)).toEqual([left[1]]);
    // An entry is the frame with its seq and time: the redactKey it was stored with stays inside.
    expect(Object.keys(left[0]).sort()).toEqual(["payload", "seq", "ts", "type"]);
    expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 6 });
    expect((await use().commit(A, { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([7]);
    expect(await outboxText(use(), B)).toContain("bob's own");
  });
}

/** A deleted channel: the frames of it, its threads, their messages and notices about them go. */
function describeChannelRedaction(use: () => Storage): void {
  test("redaction - deleting a channel redacts the frames of its messages, its threads' messages, the channels themselves and notices about them", async () => {
    await use().commit(A, {
      channels: [channel("c1"), thread("t1", "c1"), channel("c2")],
      messages: [
        msg("flat", { text: "secret flat" }),
        msg("in-t1", { thread_id: "t1", text: "secret thread" }),
        msg("other", { chat_id: "c2", text: "kept other" }),
      ],
      outbox: [
        { type: "channel.created", payload: { chat_id: "c1", name: "secret name" } },
        { type: "channel.renamed", payload: { chat_id: "t1", name: "secret thread name" } },
        { type: "message", payload: { message_id: "flat", chat_id: "c1", thread_id: null, text: "secret flat" } },
        {
          type: "message.stop",
          payload: { message_id: "in-t1", chat_id: "c1", thread_id: "t1", text: "secret thread" },
        },
        {
          type: "notification",
          payload: { kind: "generic", title: "secret notice", body: "b", ts: 1, chat_id: "c1", thread_id: "t1" },
        },
        { type: "notification", payload: { kind: "generic", title: "general notice", body: "b", ts: 1 } },
        { type: "channel.created", payload: { chat_id: "c2", name: "kept name" } },
        { type: "message", payload: { message_id: "other", chat_id: "c2", thread_id: null, text: "kept other" } },
      ],
    });
    await use().commit(A, {
      deleteChannels: ["c1", "t1"],
      outbox: [{ type: "channel.deleted", payload: { chat_id: "c1" } }],
    });
    const all = await outboxText(use(), A);
    expect(all).not.toContain("secret");
    expect((await use().readOutbox(A, 0, Infinity)).map((e) => [e.seq, e.type])).toEqual([
      [6, "notification"],
      [7, "channel.created"],
      [8, "message"],
      [9, "channel.deleted"],
    ]);
    expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 9 });
  });
}

/** Deleting messages, channels and threads takes them from every read. */
export function describeRecordDeletion(use: () => Storage): void {
  describe("deletion", () => {
    test("deletion - deleting messages takes them from every read; unknown ids are ignored", async () => {
      await use().commit(A, {
        channels: [channel("c1")],
        messages: [msg("m1", { text: "gone words" }), msg("m2", { text: "kept words" })],
      });
      const r = await use().commit(A, { deleteMessages: ["m1", "unknown"] });
      expect(r).toEqual({ seqs: [], orphanedMedia: [] });
      expect(await use().getMessage(A, "m1")).toBeUndefined();
      expect(ids((await use().history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m2"]);
      expect(ids(await use().search(A, { query: "words", scope: "all", limit: 10 }))).toEqual(["m2"]);
      expect(await use().commit(A, { deleteMessages: ["m1"] })).toEqual({ seqs: [], orphanedMedia: [] });
    });

    test("deletion - deleting a channel removes its messages and those of the listed threads", async () => {
      await use().commit(A, {
        channels: [channel("c1"), thread("t1", "c1"), thread("t2", "c1"), channel("c2")],
        messages: [
          msg("flat", { text: "doomed words" }),
          msg("in-t1", { thread_id: "t1", text: "doomed words" }),
          msg("in-t2", { thread_id: "t2", text: "doomed words" }),
          msg("other", { chat_id: "c2", text: "doomed words" }),
        ],
      });
      const r = await use().commit(A, {
        deleteChannels: ["c1", "t1", "t2"],
        outbox: [{ type: "channel.deleted", payload: { chat_id: "c1" } }],
      });
      expect(r.seqs).toEqual([1]);
      expect((await use().listChannels(A)).map((c) => c.chat_id)).toEqual(["c2"]);
      for (const id of ["flat", "in-t1", "in-t2"]) expect(await use().getMessage(A, id)).toBeUndefined();
      expect(await use().getMessage(A, "other")).toBeDefined();
      expect(ids(await use().search(A, { query: "doomed", scope: "all", limit: 10 }))).toEqual(["other"]);
      expect((await use().history(A, { chat_id: "c1", thread_id: "t1", limit: 10 }))!.messages).toEqual([]);
    });

    test("deletion - a thread deleted alone takes only its own messages", async () => {
      await use().commit(A, {
        channels: [channel("c1"), thread("t1", "c1")],
        messages: [msg("flat"), msg("in-t1", { thread_id: "t1" })],
      });
      await use().commit(A, { deleteChannels: ["t1"] });
      expect(await use().getChannel(A, "c1")).toBeDefined();
      expect(await use().getMessage(A, "flat")).toBeDefined();
      expect(await use().getMessage(A, "in-t1")).toBeUndefined();
    });
  });
}
