/**
 * Conformance of `commit` in the required core: messages round-trip and are replaced by
 * message_id, a change applies upserts before deletions and the outbox last, a change that cannot
 * be stored leaves nothing behind, and calls for one owner apply in call order. Part of
 * {@link describeStorageConformance}.
 * @module
 */
import { describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway/storage";
import { A, channel, ids, mediaRef, msg } from "./storage-records.js";

/** Messages round-trip, are replaced by message_id, and a change applies in a fixed order. */
export function describeCommitWrites(use: () => Storage): void {
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
        // The extensions of docs/PROTOCOL.md §14.1 and §14.5 travel in the record too.
        tools: [
          { index: 0, name: "search", preview: "q=x", args: { q: "x" }, output: { hits: 1 }, ok: true, duration: 0.5 },
        ],
        asks: [
          {
            picker_id: "pk1",
            kind: "approval",
            title: "Run?",
            outcome: "selected",
            option_id: "approve",
            label: "Approve",
            device_id: "d1",
            device_name: "Pixel 8",
            ts: 5,
          },
        ],
      });
      await use().commit(A, { messages: [m] });
      expect(await use().getMessage(A, "m1")).toEqual(m);
      expect(await use().getMessage(A, "m2")).toBeUndefined();
    });

    test("commit - messages are replaced by message_id", async () => {
      await use().commit(A, {
        channels: [channel("c1")],
        messages: [msg("m1", { role: "assistant", text: "partial", status: "streaming" })],
      });
      await use().commit(A, {
        messages: [msg("m1", { role: "assistant", text: "final words", status: "complete", ts: 5 })],
      });
      const m = (await use().getMessage(A, "m1"))!;
      expect(m.text).toBe("final words");
      expect(m.status).toBe("complete");
      const page = (await use().history(A, { chat_id: "c1", thread_id: null, limit: 10 }))!;
      expect(ids(page.messages)).toEqual(["m1"]);
      expect(await use().search(A, { query: "partial", scope: "all", limit: 10 })).toEqual([]);
      expect(ids(await use().search(A, { query: "final", scope: "all", limit: 10 }))).toEqual(["m1"]);
    });

    test("commit - applies upserts before deletions, and outbox last", async () => {
      const r = await use().commit(A, {
        channels: [channel("gone"), channel("kept")],
        messages: [msg("m1", { chat_id: "gone" }), msg("m2", { chat_id: "kept" }), msg("m3", { chat_id: "kept" })],
        deleteMessages: ["m3"],
        deleteChannels: ["gone"],
        outbox: [{ type: "channel.deleted", payload: { chat_id: "gone" } }],
      });
      expect(r.seqs).toEqual([1]);
      expect(r.orphanedMedia).toEqual([]);
      expect(await use().getChannel(A, "gone")).toBeUndefined();
      expect(await use().getChannel(A, "kept")).toBeDefined();
      expect(await use().getMessage(A, "m1")).toBeUndefined();
      expect(await use().getMessage(A, "m2")).toBeDefined();
      expect(await use().getMessage(A, "m3")).toBeUndefined();
    });
  });
}

/** An empty change, a change that cannot be stored, and concurrent calls for one owner. */
export function describeCommitAtomicity(use: () => Storage): void {
  describe("commit", () => {
    test("commit - an empty change changes nothing and gives no seq", async () => {
      expect(await use().commit(A, {})).toEqual({ seqs: [], orphanedMedia: [] });
      expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 0 });
    });

    test("commit - a change that cannot be stored rejects and leaves nothing behind", async () => {
      await use().commit(A, { channels: [channel("c0")], outbox: [{ type: "x", payload: {} }] });
      const poison = { big: 1n, fn: () => 1, sym: Symbol("s") } as unknown as Record<string, unknown>;
      let rejected = false;
      try {
        await use().commit(A, {
          channels: [channel("c1"), channel("c0", { name: "changed" })],
          messages: [msg("m1", { chat_id: "c1", text: "half written" })],
          outbox: [
            { type: "message", payload: { ok: true } },
            { type: "message", payload: poison },
          ],
        });
      } catch {
        rejected = true;
      }
      // An implementation that can store such values has nothing to roll back; every one we
      // know of rejects, and then not a trace of the change may remain.
      if (rejected) {
        expect(await use().getChannel(A, "c1")).toBeUndefined();
        expect((await use().getChannel(A, "c0"))!.name).toBe("name c0");
        expect(await use().getMessage(A, "m1")).toBeUndefined();
        expect(await use().search(A, { query: "half", scope: "all", limit: 5 })).toEqual([]);
        expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 1 });
        expect(await use().readOutbox(A, 0, 10)).toHaveLength(1);
        expect((await use().commit(A, { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([2]);
      } else {
        expect(await use().getMessage(A, "m1")).toBeDefined();
        expect((await use().outboxBounds(A)).last).toBe(3);
      }
    });

    test("commit - calls for one owner apply in call order", async () => {
      const pending = Array.from({ length: 20 }, (_, i) =>
        use().commit(A, {
          messages: [msg("m", { text: `version ${i}`, ts: 1 })],
          outbox: [{ type: "message", payload: { i } }],
        }),
      );
      const results = await Promise.all(pending);
      expect(results.map((r) => r.seqs)).toEqual(Array.from({ length: 20 }, (_, i) => [i + 1]));
      expect((await use().getMessage(A, "m"))!.text).toBe("version 19");
      expect((await use().readOutbox(A, 0, 100)).map((e) => e.payload.i)).toEqual(
        Array.from({ length: 20 }, (_, i) => i),
      );
    });
  });
}
