/**
 * Conformance of the `readState` capability (docs/PROTOCOL.md §15): one watermark per lane that
 * only moves forward by `(ts, message_id)`, atomically with the rest of its change, and unread
 * counts per lane that stop at the cap. Part of {@link describeStorageConformance}; the races are
 * in the concurrency suite.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { LaneUnread, ReadMark, Storage } from "chat-gateway/storage";
import { A, B, capabilityLabel, channel, msg, thread } from "./storage-records.js";

/** An assistant answer in a lane (`thread`: a thread of c1). */
export function answer(id: string, extra: Partial<StoredMessage> = {}): StoredMessage {
  return msg(id, { role: "assistant", status: "complete", ...extra });
}

/** The watermark a read of `m` would set. */
export function markOf(m: StoredMessage): ReadMark {
  return { chat_id: m.chat_id, thread_id: m.thread_id ?? null, message_id: m.message_id, ts: m.ts };
}

/** A `read` as the gateway commits it: the mark and its frame. */
export function readChange(m: StoredMessage) {
  return { read: markOf(m), outbox: [{ type: "read", payload: { ...markOf(m), device_id: "d1" } }] };
}

/** Lanes with unread messages, in a fixed order (a lane with none may be listed with 0 or left out). */
export async function unreadOf(storage: Storage, owner: string, cap = 999): Promise<LaneUnread[]> {
  const lanes = (await storage.unreadCounts(owner, cap)).filter((l) => l.unread > 0);
  return lanes.sort((a, b) => `${a.chat_id}/${a.thread_id ?? ""}`.localeCompare(`${b.chat_id}/${b.thread_id ?? ""}`));
}

/** Declares the read-state tests; `current` gives the storage of the running test. */
export function describeReadStateConformance(current: () => Storage, declared: boolean, adoptOwner: boolean): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  if (!declared) {
    describe(capabilityLabel("readState", false), () => {
      test("readState - no watermark and no count is kept", async () => {
        await storage.commit(A, { channels: [channel("c1")], messages: [answer("a1")] });
        expect(await storage.readMarks(A)).toEqual([]);
        expect(await storage.unreadCounts(A, 999)).toEqual([]);
      });
    });
    return;
  }

  describe(capabilityLabel("readState", true), () => {
    test("readState - a watermark moves only forward by (ts, message_id), one per lane, and a read that does not move it applies nothing", async () => {
      const [a1, a2, a3] = [answer("a1"), answer("a2"), answer("a3")];
      const tie = answer("a0", { ts: a2.ts }); // same ts as a2, smaller id: older
      await storage.commit(A, { channels: [channel("c1")], messages: [a1, a2, a3, tie] });
      expect((await storage.commit(A, readChange(a2))).seqs).toEqual([1]);
      for (const older of [a1, tie, a2]) {
        expect(await storage.commit(A, { ...readChange(older), messages: [msg("never")] })).toEqual({
          seqs: [],
          orphanedMedia: [],
          skipped: true,
        });
      }
      expect(await storage.getMessage(A, "never")).toBeUndefined();
      expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 1 });
      expect(await storage.readMarks(A)).toEqual([markOf(a2)]);
      expect((await storage.commit(A, readChange(a3))).seqs).toEqual([2]);
      expect(await storage.readMarks(A)).toEqual([markOf(a3)]);
      expect(await storage.readMarks(B)).toEqual([]);
    });

    test("readState - unread counts assistant messages after each lane's watermark, per lane, every one in a lane never read, at most the cap", async () => {
      await storage.commit(A, { channels: [channel("c1"), thread("t1", "c1"), channel("c2")] });
      const flat = [answer("f1"), msg("u1"), answer("f2"), answer("f3")];
      const side = [answer("s1", { thread_id: "t1" }), answer("s2", { thread_id: "t1" })];
      const busy = Array.from({ length: 12 }, (_, i) => answer(`b${i}`, { chat_id: "c2" }));
      await storage.commit(A, { messages: [...flat, ...side, ...busy] });
      await storage.commit(B, { channels: [channel("c1")], messages: [answer("f1")] });
      expect(await unreadOf(storage, A, 10)).toEqual([
        { chat_id: "c1", thread_id: null, unread: 3 },
        { chat_id: "c1", thread_id: "t1", unread: 2 },
        { chat_id: "c2", thread_id: null, unread: 10 },
      ]);
      await storage.commit(A, readChange(flat[1]));
      await storage.commit(A, readChange(side[1]));
      await storage.commit(A, readChange(busy[3]));
      expect(await unreadOf(storage, A, 10)).toEqual([
        { chat_id: "c1", thread_id: null, unread: 2 },
        { chat_id: "c2", thread_id: null, unread: 8 },
      ]);
      expect(await unreadOf(storage, B, 10)).toEqual([{ chat_id: "c1", thread_id: null, unread: 1 }]);
      const byId = (x: ReadMark, y: ReadMark) => x.message_id.localeCompare(y.message_id);
      expect((await storage.readMarks(A)).sort(byId)).toEqual(
        [markOf(busy[3]), markOf(flat[1]), markOf(side[1])].sort(byId),
      );
    });

    describeMarksMoving(() => storage, adoptOwner);
  });
}

/** Watermarks leave with their channel and move with their owner's history. */
function describeMarksMoving(current: () => Storage, adoptOwner: boolean): void {
  test("readState - deleting a channel forgets the watermarks of its lane and its threads; another owner's stay", async () => {
    const storage = current();
    const [f1, s1] = [answer("f1"), answer("s1", { thread_id: "t1" })];
    await storage.commit(A, { channels: [channel("c1"), thread("t1", "c1")], messages: [f1, s1] });
    await storage.commit(B, { channels: [channel("c1")], messages: [f1] });
    await storage.commit(A, readChange(f1));
    await storage.commit(A, readChange(s1));
    await storage.commit(B, readChange(f1));
    await storage.commit(A, { deleteChannels: ["c1", "t1"] });
    expect(await storage.readMarks(A)).toEqual([]);
    expect(await storage.readMarks(B)).toEqual([markOf(f1)]);
    // A channel made again under the same id starts unread.
    await storage.commit(A, { channels: [channel("c1")], messages: [answer("f9")] });
    expect(await unreadOf(storage, A)).toEqual([{ chat_id: "c1", thread_id: null, unread: 1 }]);
  });

  if (adoptOwner) {
    test("readState - adoptOwner moves the watermarks with the history", async () => {
      const storage = current();
      const f1 = answer("f1");
      await storage.commit("from", {
        channels: [channel("c1")],
        messages: [f1, answer("f2")],
        outbox: [{ type: "x", payload: {} }],
      });
      await storage.commit("from", readChange(f1));
      await storage.adoptOwner("from", "to");
      expect(await storage.readMarks("to")).toEqual([markOf(f1)]);
      expect(await storage.readMarks("from")).toEqual([]);
      expect(await unreadOf(storage, "to")).toEqual([{ chat_id: "c1", thread_id: null, unread: 1 }]);
    });
  }
}
