/**
 * Conformance of the per-owner outbox (sequence numbers, reads, bounds) and of history
 * pages (oldest first within a page, `before` cursors, thread lanes). Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { A, B, ids, msg } from "./storage-records.js";

/** Declares the outbox and history tests; `current` gives the storage of the running test. */
export function describeLanesConformance(current: () => Storage): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describeOutbox(() => storage);
  describeHistory(() => storage);
}

/** Outbox sequence numbers, reads after a cursor and bounds. */
function describeOutbox(use: () => Storage): void {
  describe("outbox", () => {
    test("outbox - seqs start at 1 and grow by one across commits without gaps", async () => {
      const all: number[] = [];
      for (const n of [1, 3, 0, 2, 1]) {
        const r = await use().commit(A, {
          outbox: Array.from({ length: n }, (_, i) => ({ type: "notification", payload: { i } })),
        });
        expect(r.seqs).toHaveLength(n);
        all.push(...r.seqs);
      }
      expect(all).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 7 });
    });

    test("outbox - readOutbox returns frames after the cursor in seq order, at most limit", async () => {
      const before = Date.now();
      await use().commit(A, {
        outbox: Array.from({ length: 10 }, (_, i) => ({
          type: i % 2 ? "message" : "message.stop",
          payload: { i, text: "é \u{1F600}" },
        })),
      });
      const after = Date.now();
      const page = await use().readOutbox(A, 3, 4);
      expect(page.map((e) => e.seq)).toEqual([4, 5, 6, 7]);
      expect(page[0]).toEqual({
        type: "message",
        payload: { i: 3, text: "é \u{1F600}" },
        seq: 4,
        ts: expect.any(Number),
      });
      expect(page[0].ts).toBeGreaterThanOrEqual(before);
      expect(page[0].ts).toBeLessThanOrEqual(after);
      expect((await use().readOutbox(A, 8, 100)).map((e) => e.seq)).toEqual([9, 10]);
      expect(await use().readOutbox(A, 10, 100)).toEqual([]);
      expect((await use().readOutbox(A, 0, 1)).map((e) => e.seq)).toEqual([1]);
    });
  });
}

/** History pages: order, `before` cursors, ties, separate lanes. */
function describeHistory(use: () => Storage): void {
  describe("history", () => {
    describeHistoryPages(use);
    describeHistoryLanes(use);
  });
}

/** A lane read page by page: oldest first within a page, newest page first, no gap or repeat at ties. */
function describeHistoryPages(use: () => Storage): void {
  test("history - an empty lane gives an empty page", async () => {
    expect(await use().history(A, { chat_id: "c1", thread_id: null, limit: 50 })).toEqual({
      messages: [],
      has_more: false,
    });
  });

  test("history - newest page comes oldest first with has_more", async () => {
    await use().commit(A, {
      messages: [msg("a", { ts: 30 }), msg("b", { ts: 10 }), msg("c", { ts: 20 }), msg("d", { ts: 40 })],
    });
    const page = (await use().history(A, { chat_id: "c1", thread_id: null, limit: 3 }))!;
    expect(ids(page.messages)).toEqual(["c", "a", "d"]);
    expect(page.has_more).toBe(true);
    const older = (await use().history(A, { chat_id: "c1", thread_id: null, limit: 3, before: "c" }))!;
    expect(older).toEqual({ messages: [expect.objectContaining({ message_id: "b" })], has_more: false });
    const exact = (await use().history(A, { chat_id: "c1", thread_id: null, limit: 4 }))!;
    expect(exact.has_more).toBe(false);
    expect(exact.messages[0]).toEqual(msg("b", { ts: 10, text: "text of b" }));
  });

  test("history - pages by id when timestamps tie", async () => {
    const tied = Array.from({ length: 25 }, (_, i) => msg(`m${String(i).padStart(2, "0")}`, { ts: 1000 }));
    await use().commit(A, { messages: [...tied].reverse() });
    const seen: string[] = [];
    let before: string | undefined;
    for (;;) {
      const page = (await use().history(A, { chat_id: "c1", thread_id: null, limit: 4, before }))!;
      seen.unshift(...ids(page.messages));
      if (!page.has_more) break;
      before = page.messages[0].message_id;
    }
    expect(seen).toEqual(ids(tied));
  });

  test("history - pages through 1,000 messages, many sharing one ts, with no gap and no repeat", async () => {
    const all: StoredMessage[] = [];
    for (let i = 0; i < 1000; i++) {
      // Ids deliberately do not sort like timestamps, and 400 messages share ts 5000.
      const ts = i >= 300 && i < 700 ? 5000 : i < 300 ? 1000 + i : 6000 + i;
      all.push(msg(`id-${(i * 7919) % 1000}`.padEnd(9, "x"), { ts }));
    }
    for (let i = 0; i < all.length; i += 250) await use().commit(A, { messages: all.slice(i, i + 250) });
    await use().commit(A, {
      messages: [msg("other-lane", { thread_id: "t1", ts: 5000 }), msg("other-chat", { chat_id: "c2", ts: 5000 })],
    });
    const expected = ids([...all].sort((a, b) => a.ts - b.ts || (a.message_id < b.message_id ? -1 : 1)));
    const seen: string[] = [];
    let before: string | undefined;
    let pages = 0;
    for (;;) {
      const page = (await use().history(A, { chat_id: "c1", thread_id: null, limit: 37, before }))!;
      pages++;
      expect(page.messages.length).toBe(page.has_more ? 37 : 1000 % 37);
      seen.unshift(...ids(page.messages));
      if (!page.has_more) break;
      before = page.messages[0].message_id;
    }
    expect(pages).toBe(Math.ceil(1000 / 37));
    expect(new Set(seen).size).toBe(1000);
    expect(seen).toEqual(expected);
  });
}

/** Each chat and thread is a lane of its own, and a `before` from another lane or owner is unknown. */
function describeHistoryLanes(use: () => Storage): void {
  test("history - lanes are separate: flat lane, each thread, each channel", async () => {
    await use().commit(A, {
      messages: [
        msg("flat"),
        msg("in-t1", { thread_id: "t1" }),
        msg("in-t2", { thread_id: "t2" }),
        msg("other", { chat_id: "c2" }),
      ],
    });
    expect(ids((await use().history(A, { chat_id: "c1", thread_id: null, limit: 50 }))!.messages)).toEqual(["flat"]);
    expect(ids((await use().history(A, { chat_id: "c1", thread_id: "t1", limit: 50 }))!.messages)).toEqual(["in-t1"]);
    expect(ids((await use().history(A, { chat_id: "c2", thread_id: null, limit: 50 }))!.messages)).toEqual(["other"]);
  });

  test("history - an unknown before, or one from another lane or owner, resolves undefined", async () => {
    await use().commit(A, { messages: [msg("flat"), msg("in-t1", { thread_id: "t1" })] });
    await use().commit(B, { messages: [msg("bobs")] });
    expect(await use().history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "nope" })).toBeUndefined();
    expect(await use().history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "in-t1" })).toBeUndefined();
    expect(await use().history(A, { chat_id: "c1", thread_id: "t1", limit: 5, before: "flat" })).toBeUndefined();
    expect(await use().history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "bobs" })).toBeUndefined();
    expect(await use().history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "flat" })).toEqual({
      messages: [],
      has_more: false,
    });
  });
}
