/**
 * The shared conformance suite for {@link Storage}: every guarantee documented in
 * `src/storage.ts`, declared as vitest tests. Run it from a five-line test file per
 * implementation:
 *
 * ```ts
 * import { memoryStorage } from "chat-gateway/storage/memory";
 * import { describeStorageConformance } from "../conformance/storage.js";
 * describeStorageConformance("memory", async () => ({ storage: memoryStorage() }));
 * ```
 * @module
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { Storage, StoredMessage } from "chat-gateway";
import { LIMITS } from "chat-gateway";
import { describeDeletionConformance } from "./storage-deletion.js";
import { A, B, channel, device, ids, media, mediaRef, msg, sleep, thread } from "./storage-records.js";

/** What a conformance run needs from an implementation: a fresh, empty storage per test. */
export type StorageFactory = () => Promise<{ storage: Storage; cleanup?: () => Promise<void> }>;

/**
 * Declares the storage conformance tests for one implementation. `make` returns a fresh, empty
 * storage (not yet opened; the suite calls `open` and `close`) and an optional cleanup.
 */
export function describeStorageConformance(name: string, make: StorageFactory): void {
  describe(`storage conformance: ${name}`, () => {
    let storage: Storage;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      const made = await make();
      storage = made.storage;
      cleanup = made.cleanup;
      await storage.open?.();
    });

    afterEach(async () => {
      await storage.close?.();
      await cleanup?.();
    });

    describe("channels", () => {
      test("channels - stored, replaced by chat_id and listed with archived ones", async () => {
        await storage.commit(A, { channels: [channel("c1"), channel("c2", { archived: true, favorite: true, color: "#112233" })] });
        await storage.commit(A, { channels: [channel("c1", { name: "renamed", icon: null })] });
        expect(await storage.getChannel(A, "c1")).toEqual(channel("c1", { name: "renamed", icon: null }));
        expect(await storage.getChannel(A, "nope")).toBeUndefined();
        const list = await storage.listChannels(A);
        expect(list.map((c) => c.chat_id).sort()).toEqual(["c1", "c2"]);
        expect(list.find((c) => c.chat_id === "c2")).toEqual(channel("c2", { archived: true, favorite: true, color: "#112233" }));
      });

      test("channels - every optional field round-trips", async () => {
        const full = channel("c9", {
          kind: "default",
          is_default: true,
          auto: true,
          favorite: false,
          icon: "iVBORw0KGgo=",
          color: "#abcdef",
          automation: false,
          created_ts: 1_700_000_000_123,
        });
        await storage.commit(A, { channels: [full, thread("t9", "c9")] });
        expect(await storage.getChannel(A, "c9")).toEqual(full);
        expect(await storage.getChannel(A, "t9")).toEqual(thread("t9", "c9"));
      });
    });

    describe("owners", () => {
      test("owners - colliding ids never cross owners", async () => {
        await storage.commit(A, {
          channels: [channel("c1", { name: "alice's" })],
          messages: [msg("m1", { text: "alpha secret", client_msg_id: "k1", role: "assistant", status: "streaming" })],
          outbox: [{ type: "message", payload: { who: "alice" } }],
        });
        await storage.commit(B, {
          channels: [channel("c1", { name: "bob's" })],
          messages: [msg("m1", { text: "bravo", client_msg_id: "k1" })],
          outbox: [{ type: "message", payload: { who: "bob" } }, { type: "message", payload: { who: "bob" } }],
        });
        await storage.putDevice(A, device("d1", { device_name: "alice phone" }));
        await storage.putDevice(B, device("d1", { device_name: "bob phone" }));
        await storage.putMedia(A, media(A, "x1"));

        expect((await storage.getChannel(A, "c1"))?.name).toBe("alice's");
        expect((await storage.getChannel(B, "c1"))?.name).toBe("bob's");
        expect((await storage.getMessage(B, "m1"))?.text).toBe("bravo");
        expect((await storage.findByClientMsgId(A, "c1", "k1"))?.text).toBe("alpha secret");
        expect((await storage.getDevice(B, "d1"))?.device_name).toBe("bob phone");
        expect(await storage.listDevices(B)).toHaveLength(1);
        expect(await storage.getMedia(B, "x1")).toBeUndefined();
        expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 1 });
        expect(await storage.outboxBounds(B)).toEqual({ first: 1, last: 2 });
        expect((await storage.readOutbox(A, 0, 10)).map((e) => e.payload)).toEqual([{ who: "alice" }]);
        expect(await storage.search(B, { query: "secret", scope: "all", limit: 10 })).toEqual([]);
        expect(ids((await storage.history(B, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
        expect((await storage.history(B, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages[0].text).toBe("bravo");
        expect(await storage.unfinishedMessages()).toEqual([{ owner: A, message: expect.objectContaining({ message_id: "m1", text: "alpha secret" }) }]);

        await storage.commit(A, { deleteChannels: ["c1"] });
        expect(await storage.getChannel(B, "c1")).toBeDefined();
        expect(await storage.getMessage(B, "m1")).toBeDefined();
        expect(await storage.getMessage(A, "m1")).toBeUndefined();
      });

      test("owners - an unknown owner reads as empty", async () => {
        expect(await storage.listChannels("nobody")).toEqual([]);
        expect(await storage.listDevices("nobody")).toEqual([]);
        expect(await storage.outboxBounds("nobody")).toEqual({ first: 1, last: 0 });
        expect(await storage.readOutbox("nobody", 0, 10)).toEqual([]);
        expect(await storage.history("nobody", { chat_id: "c1", thread_id: null, limit: 10 })).toEqual({ messages: [], has_more: false });
        expect(await storage.search("nobody", { query: "text", scope: "all", limit: 10 })).toEqual([]);
        await storage.pruneOutbox("nobody", { maxFrames: 1, maxAgeMs: 1 }, Date.now());
      });
    });

    describe("copies", () => {
      test("copies - mutating what was passed in or returned leaves stored state alone", async () => {
        const input = msg("m1", { media: [mediaRef("x1")], runtime: { model: "demo" } });
        const frame = { type: "message", payload: { nested: { n: 1 } } };
        const ch = channel("c1");
        await storage.commit(A, { channels: [ch], messages: [input], outbox: [frame] });
        input.text = "changed";
        input.media[0].filename = "changed";
        frame.payload.nested.n = 2;
        ch.name = "changed";

        const got = (await storage.getMessage(A, "m1"))!;
        expect(got.text).toBe("text of m1");
        expect(got.media[0].filename).toBe("x1.png");
        got.runtime!.model = "mutated";
        expect((await storage.getMessage(A, "m1"))!.runtime).toEqual({ model: "demo" });
        const entries = await storage.readOutbox(A, 0, 10);
        expect(entries[0].payload).toEqual({ nested: { n: 1 } });
        (entries[0].payload.nested as { n: number }).n = 3;
        expect((await storage.readOutbox(A, 0, 10))[0].payload).toEqual({ nested: { n: 1 } });
        const list = await storage.listChannels(A);
        list[0].name = "mutated";
        expect((await storage.getChannel(A, "c1"))!.name).toBe("name c1");
        const d = device("d1");
        await storage.putDevice(A, d);
        d.caps.media = false;
        expect((await storage.getDevice(A, "d1"))!.caps.media).toBe(true);
      });
    });

    describe("commit", () => {
      test("commit - a message round-trips with every field", async () => {
        const m = msg("m1", {
          role: "assistant",
          text: "answer",
          reasoning: "because",
          model: "demo",
          tokens: 42,
          runtime: { model: "demo", context_pct: 12, cwd: "~/x", latency: 1.5, cost: 0.01 },
          media: [mediaRef("x1"), { ...mediaRef("x2"), kind: "voice", message_id: "m1" }],
          status: "complete",
          reply_to: "m0",
          client_msg_id: "k",
          thread_id: "t1",
        });
        await storage.commit(A, { messages: [m] });
        expect(await storage.getMessage(A, "m1")).toEqual(m);
        expect(await storage.getMessage(A, "m2")).toBeUndefined();
      });

      test("commit - messages are replaced by message_id", async () => {
        await storage.commit(A, { messages: [msg("m1", { role: "assistant", text: "partial", status: "streaming" })] });
        await storage.commit(A, { messages: [msg("m1", { role: "assistant", text: "final words", status: "complete", ts: 5 })] });
        const m = (await storage.getMessage(A, "m1"))!;
        expect(m.text).toBe("final words");
        expect(m.status).toBe("complete");
        const page = (await storage.history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!;
        expect(ids(page.messages)).toEqual(["m1"]);
        expect(await storage.search(A, { query: "partial", scope: "all", limit: 10 })).toEqual([]);
        expect(ids(await storage.search(A, { query: "final", scope: "all", limit: 10 }))).toEqual(["m1"]);
      });

      test("commit - applies upserts before deletions, and outbox last", async () => {
        const r = await storage.commit(A, {
          channels: [channel("gone"), channel("kept")],
          messages: [msg("m1", { chat_id: "gone", media: [mediaRef("x1")] }), msg("m2", { chat_id: "kept" }), msg("m3", { chat_id: "kept" })],
          deleteMessages: ["m3"],
          deleteChannels: ["gone"],
          outbox: [{ type: "channel.deleted", payload: { chat_id: "gone" } }],
        });
        expect(r.seqs).toEqual([1]);
        expect(r.orphanedMedia).toEqual(["x1"]);
        expect(await storage.getChannel(A, "gone")).toBeUndefined();
        expect(await storage.getChannel(A, "kept")).toBeDefined();
        expect(await storage.getMessage(A, "m1")).toBeUndefined();
        expect(await storage.getMessage(A, "m2")).toBeDefined();
        expect(await storage.getMessage(A, "m3")).toBeUndefined();
      });

      test("commit - an empty change changes nothing and gives no seq", async () => {
        expect(await storage.commit(A, {})).toEqual({ seqs: [], orphanedMedia: [] });
        expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 0 });
      });

      test("commit - a change that cannot be stored rejects and leaves nothing behind", async () => {
        await storage.commit(A, { channels: [channel("c0")], outbox: [{ type: "x", payload: {} }] });
        const poison = { big: 1n, fn: () => 1, sym: Symbol("s") } as unknown as Record<string, unknown>;
        let rejected = false;
        try {
          await storage.commit(A, {
            channels: [channel("c1"), channel("c0", { name: "changed" })],
            messages: [msg("m1", { chat_id: "c1", text: "half written" })],
            outbox: [{ type: "message", payload: { ok: true } }, { type: "message", payload: poison }],
          });
        } catch {
          rejected = true;
        }
        // An implementation that can store such values has nothing to roll back; every one we
        // know of rejects, and then not a trace of the change may remain.
        if (rejected) {
          expect(await storage.getChannel(A, "c1")).toBeUndefined();
          expect((await storage.getChannel(A, "c0"))!.name).toBe("name c0");
          expect(await storage.getMessage(A, "m1")).toBeUndefined();
          expect(await storage.search(A, { query: "half", scope: "all", limit: 5 })).toEqual([]);
          expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 1 });
          expect(await storage.readOutbox(A, 0, 10)).toHaveLength(1);
          expect((await storage.commit(A, { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([2]);
        } else {
          expect(await storage.getMessage(A, "m1")).toBeDefined();
          expect((await storage.outboxBounds(A)).last).toBe(3);
        }
      });

      test("commit - calls for one owner apply in call order", async () => {
        const pending = Array.from({ length: 20 }, (_, i) =>
          storage.commit(A, {
            messages: [msg("m", { text: `version ${i}`, ts: 1 })],
            outbox: [{ type: "message", payload: { i } }],
          }),
        );
        const results = await Promise.all(pending);
        expect(results.map((r) => r.seqs)).toEqual(Array.from({ length: 20 }, (_, i) => [i + 1]));
        expect((await storage.getMessage(A, "m"))!.text).toBe("version 19");
        expect((await storage.readOutbox(A, 0, 100)).map((e) => e.payload.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      });
    });

    describe("outbox", () => {
      test("outbox - seqs start at 1 and grow by one across commits without gaps", async () => {
        const all: number[] = [];
        for (const n of [1, 3, 0, 2, 1]) {
          const r = await storage.commit(A, { outbox: Array.from({ length: n }, (_, i) => ({ type: "notification", payload: { i } })) });
          expect(r.seqs).toHaveLength(n);
          all.push(...r.seqs);
        }
        expect(all).toEqual([1, 2, 3, 4, 5, 6, 7]);
        expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 7 });
      });

      test("outbox - readOutbox returns frames after the cursor in seq order, at most limit", async () => {
        const before = Date.now();
        await storage.commit(A, { outbox: Array.from({ length: 10 }, (_, i) => ({ type: i % 2 ? "message" : "message.stop", payload: { i, text: "é \u{1F600}" } })) });
        const after = Date.now();
        const page = await storage.readOutbox(A, 3, 4);
        expect(page.map((e) => e.seq)).toEqual([4, 5, 6, 7]);
        expect(page[0]).toEqual({ type: "message", payload: { i: 3, text: "é \u{1F600}" }, seq: 4, ts: expect.any(Number) });
        expect(page[0].ts).toBeGreaterThanOrEqual(before);
        expect(page[0].ts).toBeLessThanOrEqual(after);
        expect((await storage.readOutbox(A, 8, 100)).map((e) => e.seq)).toEqual([9, 10]);
        expect(await storage.readOutbox(A, 10, 100)).toEqual([]);
        expect((await storage.readOutbox(A, 0, 1)).map((e) => e.seq)).toEqual([1]);
      });

      test("outbox - prune by count keeps the newest frames and last", async () => {
        await storage.commit(A, { outbox: Array.from({ length: 10 }, (_, i) => ({ type: "message", payload: { i } })) });
        await storage.pruneOutbox(A, { maxFrames: 3, maxAgeMs: 86_400_000 }, Date.now());
        expect(await storage.outboxBounds(A)).toEqual({ first: 8, last: 10 });
        expect((await storage.readOutbox(A, 0, 100)).map((e) => e.seq)).toEqual([8, 9, 10]);
        expect((await storage.commit(A, { outbox: [{ type: "message", payload: {} }] })).seqs).toEqual([11]);
      });

      test("outbox - prune by age drops only older frames", async () => {
        await storage.commit(A, { outbox: [{ type: "message", payload: { n: 1 } }, { type: "message", payload: { n: 2 } }] });
        await sleep(15);
        await storage.commit(A, { outbox: [{ type: "message", payload: { n: 3 } }] });
        const [, , newest] = await storage.readOutbox(A, 0, 10);
        await storage.pruneOutbox(A, { maxFrames: 1000, maxAgeMs: 5 }, newest.ts + 5);
        expect((await storage.readOutbox(A, 0, 10)).map((e) => e.seq)).toEqual([3]);
        expect(await storage.outboxBounds(A)).toEqual({ first: 3, last: 3 });
      });

      test("outbox - pruning everything keeps last and seqs are never reused", async () => {
        await storage.commit(A, { outbox: [{ type: "message", payload: {} }, { type: "message", payload: {} }] });
        await storage.pruneOutbox(A, { maxFrames: 0, maxAgeMs: 86_400_000 }, Date.now());
        expect(await storage.outboxBounds(A)).toEqual({ first: 3, last: 2 });
        expect(await storage.readOutbox(A, 0, 10)).toEqual([]);
        await storage.pruneOutbox(A, { maxFrames: 10, maxAgeMs: 0 }, Date.now() + 1000);
        expect(await storage.outboxBounds(A)).toEqual({ first: 3, last: 2 });
        expect((await storage.commit(A, { outbox: [{ type: "message", payload: {} }] })).seqs).toEqual([3]);
        expect(await storage.outboxBounds(A)).toEqual({ first: 3, last: 3 });
      });

      test("outbox - an unlimited policy keeps everything", async () => {
        await storage.commit(A, { outbox: [{ type: "message", payload: {} }, { type: "message", payload: {} }] });
        await storage.pruneOutbox(A, { maxFrames: Infinity, maxAgeMs: Infinity }, Date.now() + 1e9);
        expect(await storage.outboxBounds(A)).toEqual({ first: 1, last: 2 });
        expect(await storage.readOutbox(A, 0, Infinity)).toHaveLength(2);
      });

      test("outbox - pruning one owner leaves the others alone", async () => {
        await storage.commit(A, { outbox: [{ type: "message", payload: {} }, { type: "message", payload: {} }] });
        await storage.commit(B, { outbox: [{ type: "message", payload: {} }, { type: "message", payload: {} }] });
        await storage.pruneOutbox(A, { maxFrames: 0, maxAgeMs: 0 }, Date.now() + 1000);
        expect(await storage.outboxBounds(B)).toEqual({ first: 1, last: 2 });
        expect(await storage.readOutbox(B, 0, 10)).toHaveLength(2);
      });
    });

    describe("history", () => {
      test("history - an empty lane gives an empty page", async () => {
        expect(await storage.history(A, { chat_id: "c1", thread_id: null, limit: 50 })).toEqual({ messages: [], has_more: false });
      });

      test("history - newest page comes oldest first with has_more", async () => {
        await storage.commit(A, { messages: [msg("a", { ts: 30 }), msg("b", { ts: 10 }), msg("c", { ts: 20 }), msg("d", { ts: 40 })] });
        const page = (await storage.history(A, { chat_id: "c1", thread_id: null, limit: 3 }))!;
        expect(ids(page.messages)).toEqual(["c", "a", "d"]);
        expect(page.has_more).toBe(true);
        const older = (await storage.history(A, { chat_id: "c1", thread_id: null, limit: 3, before: "c" }))!;
        expect(older).toEqual({ messages: [expect.objectContaining({ message_id: "b" })], has_more: false });
        const exact = (await storage.history(A, { chat_id: "c1", thread_id: null, limit: 4 }))!;
        expect(exact.has_more).toBe(false);
        expect(exact.messages[0]).toEqual(msg("b", { ts: 10, text: "text of b" }));
      });

      test("history - pages by id when timestamps tie", async () => {
        const tied = Array.from({ length: 25 }, (_, i) => msg(`m${String(i).padStart(2, "0")}`, { ts: 1000 }));
        await storage.commit(A, { messages: [...tied].reverse() });
        const seen: string[] = [];
        let before: string | undefined;
        for (;;) {
          const page = (await storage.history(A, { chat_id: "c1", thread_id: null, limit: 4, before }))!;
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
        for (let i = 0; i < all.length; i += 250) await storage.commit(A, { messages: all.slice(i, i + 250) });
        await storage.commit(A, { messages: [msg("other-lane", { thread_id: "t1", ts: 5000 }), msg("other-chat", { chat_id: "c2", ts: 5000 })] });
        const expected = ids([...all].sort((a, b) => a.ts - b.ts || (a.message_id < b.message_id ? -1 : 1)));
        const seen: string[] = [];
        let before: string | undefined;
        let pages = 0;
        for (;;) {
          const page = (await storage.history(A, { chat_id: "c1", thread_id: null, limit: 37, before }))!;
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

      test("history - lanes are separate: flat lane, each thread, each channel", async () => {
        await storage.commit(A, {
          messages: [msg("flat"), msg("in-t1", { thread_id: "t1" }), msg("in-t2", { thread_id: "t2" }), msg("other", { chat_id: "c2" })],
        });
        expect(ids((await storage.history(A, { chat_id: "c1", thread_id: null, limit: 50 }))!.messages)).toEqual(["flat"]);
        expect(ids((await storage.history(A, { chat_id: "c1", thread_id: "t1", limit: 50 }))!.messages)).toEqual(["in-t1"]);
        expect(ids((await storage.history(A, { chat_id: "c2", thread_id: null, limit: 50 }))!.messages)).toEqual(["other"]);
      });

      test("history - an unknown before, or one from another lane or owner, resolves undefined", async () => {
        await storage.commit(A, { messages: [msg("flat"), msg("in-t1", { thread_id: "t1" })] });
        await storage.commit(B, { messages: [msg("bobs")] });
        expect(await storage.history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "nope" })).toBeUndefined();
        expect(await storage.history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "in-t1" })).toBeUndefined();
        expect(await storage.history(A, { chat_id: "c1", thread_id: "t1", limit: 5, before: "flat" })).toBeUndefined();
        expect(await storage.history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "bobs" })).toBeUndefined();
        expect(await storage.history(A, { chat_id: "c1", thread_id: null, limit: 5, before: "flat" })).toEqual({ messages: [], has_more: false });
      });
    });

    describe("findByClientMsgId", () => {
      test("findByClientMsgId - finds the message in any lane of the chat, and only there", async () => {
        await storage.commit(A, {
          messages: [msg("m1", { client_msg_id: "k1" }), msg("m2", { client_msg_id: "k2", thread_id: "t1" }), msg("m3", { client_msg_id: "k3", chat_id: "c2" })],
        });
        expect((await storage.findByClientMsgId(A, "c1", "k1"))?.message_id).toBe("m1");
        expect((await storage.findByClientMsgId(A, "c1", "k2"))?.message_id).toBe("m2");
        expect(await storage.findByClientMsgId(A, "c1", "k3")).toBeUndefined();
        expect(await storage.findByClientMsgId(A, "c2", "k1")).toBeUndefined();
        expect(await storage.findByClientMsgId(B, "c1", "k1")).toBeUndefined();
        await storage.commit(A, { deleteMessages: ["m1"] });
        expect(await storage.findByClientMsgId(A, "c1", "k1")).toBeUndefined();
      });
    });

    describe("deletion", () => {
      test("deletion - deleting messages reports their media and forgets its metadata", async () => {
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

      test("deletion - deleting a channel removes its messages and those of the listed threads, and reports their media", async () => {
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
        const r = await storage.commit(A, { deleteChannels: ["c1", "t1", "t2"], outbox: [{ type: "channel.deleted", payload: { chat_id: "c1" } }] });
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

      test("deletion - a thread deleted alone takes only its own messages", async () => {
        await storage.commit(A, { channels: [channel("c1"), thread("t1", "c1")], messages: [msg("flat"), msg("in-t1", { thread_id: "t1" })] });
        await storage.commit(A, { deleteChannels: ["t1"] });
        expect(await storage.getChannel(A, "c1")).toBeDefined();
        expect(await storage.getMessage(A, "flat")).toBeDefined();
        expect(await storage.getMessage(A, "in-t1")).toBeUndefined();
      });
    });

    describeDeletionConformance(() => storage);

    describe("devices", () => {
      test("devices - stored, replaced and listed per owner", async () => {
        await storage.putDevice(A, device("d1"));
        await storage.putDevice(A, device("d2", { fcm_token: "f", ntfy_topic: "n", caps: { min_protocol: 1, media: false, push: "fcm", streaming: false } }));
        await storage.putDevice(A, device("d1", { device_name: "renamed", last_seen: 5 }));
        expect(await storage.getDevice(A, "d1")).toEqual(device("d1", { device_name: "renamed", last_seen: 5 }));
        expect(await storage.getDevice(A, "d2")).toEqual(device("d2", { fcm_token: "f", ntfy_topic: "n", caps: { min_protocol: 1, media: false, push: "fcm", streaming: false } }));
        expect(await storage.getDevice(A, "d3")).toBeUndefined();
        expect((await storage.listDevices(A)).map((d) => d.device_id).sort()).toEqual(["d1", "d2"]);
      });
    });

    describe("media", () => {
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
    });

    describe("search", () => {
      const search = (query: string, extra: Partial<Parameters<Storage["search"]>[1]> = {}) =>
        storage.search(A, { query, scope: "all", limit: 20, ...extra });

      test("search - finds words across the owner's messages with the hit's fields", async () => {
        await storage.commit(A, {
          messages: [msg("m1", { text: "The quick brown fox", role: "assistant", ts: 100 }), msg("m2", { text: "lazy dog", thread_id: "t1", ts: 200 })],
        });
        expect(await search("fox")).toEqual([{ message_id: "m1", chat_id: "c1", thread_id: null, role: "assistant", snippet: "The quick brown fox", ts: 100 }]);
        expect(await search("dog")).toEqual([{ message_id: "m2", chat_id: "c1", thread_id: "t1", role: "user", snippet: "lazy dog", ts: 200 }]);
        expect(await search("cat")).toEqual([]);
      });

      test("search - is case-insensitive and ignores diacritics both ways", async () => {
        await storage.commit(A, { messages: [msg("m1", { text: "Un café très crème à Zürich" }), msg("m2", { text: "plain cafe" })] });
        expect(ids(await search("CAFE")).sort()).toEqual(["m1", "m2"]);
        expect(ids(await search("café")).sort()).toEqual(["m1", "m2"]);
        expect(ids(await search("zurich"))).toEqual(["m1"]);
        expect(ids(await search("Crème"))).toEqual(["m1"]);
      });

      test("search - matches word prefixes, not word middles", async () => {
        await storage.commit(A, { messages: [msg("m1", { text: "configuration management" }), msg("m2", { text: "reconfigure" })] });
        expect(ids(await search("config"))).toEqual(["m1"]);
        expect(ids(await search("manag conf"))).toEqual(["m1"]);
        expect(await search("uration")).toEqual([]);
      });

      test("search - input that looks like query syntax is searched as plain words", async () => {
        await storage.commit(A, { messages: [msg("m1", { text: "use AND or NOT near the foo-bar (quoted) \"text\" with c++ and 2*3" })] });
        for (const q of ['"foo', "foo AND", "NOT foo", "foo OR", "(foo", "foo*", "-foo", "foo:bar", "NEAR/2 foo", "^foo", "foo'bar", "c++", "2*3"]) {
          expect(ids(await search(q)), q).toEqual(["m1"]);
        }
      });

      test("search - blank-ish input gives no hits and never fails", async () => {
        await storage.commit(A, { messages: [msg("m1", { text: "some words * here" })] });
        for (const q of ["*", '"', "()", " - ", "\u0301", "...", "''", "\t\n"]) {
          expect(await search(q), JSON.stringify(q)).toEqual([]);
        }
      });

      test("search - chat scope covers the channel and its threads, thread scope only that thread", async () => {
        await storage.commit(A, {
          messages: [
            msg("flat", { text: "needle one", ts: 1 }),
            msg("t1m", { text: "needle two", thread_id: "t1", ts: 2 }),
            msg("t2m", { text: "needle three", thread_id: "t2", ts: 3 }),
            msg("c2m", { text: "needle four", chat_id: "c2", ts: 4 }),
          ],
        });
        expect(ids(await search("needle"))).toEqual(["c2m", "t2m", "t1m", "flat"]);
        expect(ids(await search("needle", { scope: "chat", chat_id: "c1" }))).toEqual(["t2m", "t1m", "flat"]);
        expect(ids(await search("needle", { scope: "chat", chat_id: "c1", thread_id: "t1" }))).toEqual(["t1m"]);
        expect(ids(await search("needle", { scope: "chat", chat_id: "c2" }))).toEqual(["c2m"]);
      });

      test("search - returns at most limit hits", async () => {
        await storage.commit(A, { messages: Array.from({ length: 30 }, (_, i) => msg(`m${i}`, { text: `common word ${i}`, ts: i })) });
        const hits = await search("common", { limit: 7 });
        expect(ids(hits)).toEqual(["m29", "m28", "m27", "m26", "m25", "m24", "m23"]);
        expect(await search("common", { limit: 1 })).toHaveLength(1);
      });

      test("search - ranks more matched words first, then more occurrences, then newest", async () => {
        await storage.commit(A, {
          messages: [
            msg("both", { text: "alpha and beta together", ts: 1 }),
            msg("alpha-thrice", { text: "alpha alpha alpha", ts: 2 }),
            msg("alpha-once-old", { text: "alpha only", ts: 3 }),
            msg("alpha-once-new", { text: "only alpha", ts: 4 }),
            msg("none", { text: "gamma", ts: 5 }),
          ],
        });
        expect(ids(await search("alpha beta"))).toEqual(["both", "alpha-thrice", "alpha-once-new", "alpha-once-old"]);
      });

      test("search - snippet is at most 200 characters with context around the first hit", async () => {
        const long = `${"lorem ipsum ".repeat(60)}the needle sits here ${"dolor sit amet ".repeat(60)}`;
        await storage.commit(A, { messages: [msg("long", { text: long }), msg("start", { text: `needle first ${"x".repeat(500)}` })] });
        const hits = await search("needle");
        expect(hits).toHaveLength(2);
        for (const h of hits) {
          expect(h.snippet.length).toBeLessThanOrEqual(LIMITS.snippetMax);
          expect(h.snippet.length).toBeGreaterThan(20);
          expect(h.snippet).toContain("needle");
        }
        const deep = hits.find((h) => h.message_id === "long")!;
        expect(deep.snippet).toMatch(/ipsum.*needle sits here.*dolor/);
      });

      test("search - snippet keeps the original accents", async () => {
        await storage.commit(A, { messages: [msg("m1", { text: "Déjà vu" })] });
        expect((await search("deja"))[0].snippet).toBe("Déjà vu");
      });
    });

    describe("unfinishedMessages", () => {
      test("unfinishedMessages - lists streaming assistant messages of every owner", async () => {
        await storage.commit(A, {
          messages: [
            msg("s1", { role: "assistant", status: "streaming" }),
            msg("done", { role: "assistant", status: "complete" }),
            msg("user", { role: "user" }),
          ],
        });
        await storage.commit(B, { messages: [msg("s2", { role: "assistant", status: "streaming", thread_id: "t1" })] });
        const open = await storage.unfinishedMessages();
        expect(open.map((u) => `${u.owner}/${u.message.message_id}`).sort()).toEqual([`${A}/s1`, `${B}/s2`]);
        expect(open.find((u) => u.owner === B)!.message).toEqual(expect.objectContaining({ thread_id: "t1", status: "streaming", role: "assistant" }));
        await storage.commit(A, { messages: [msg("s1", { role: "assistant", status: "interrupted" })] });
        await storage.commit(B, { deleteMessages: ["s2"] });
        expect(await storage.unfinishedMessages()).toEqual([]);
      });
    });
  });
}
