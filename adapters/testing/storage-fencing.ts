/**
 * Conformance of what keeps a lane's answers to one writer and one final (docs/PROTOCOL.md §4.2):
 * `Change.requireStreaming` in every storage, and with the `fencing` capability the lane tokens of
 * `Change.takeLane` and `Change.fence`, each checked with many calls at once, half through the
 * peer when the factory gives one. Part of {@link describeStorageConformance}.
 * @module
 */
import { describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { Change, Storage, StorageCapabilities } from "chat-gateway/storage";
import { createGateway, memoryLaneLock } from "chat-gateway";
import { A, B, capabilityLabel, channel, msg, thread } from "./storage-records.js";

const LANE = { chat_id: "c1", thread_id: null };
const RACERS = 16;

function answer(id: string, extra: Partial<StoredMessage> = {}): StoredMessage {
  return msg(id, { role: "assistant", status: "streaming", ...extra });
}

/** The change that ends an answer: its final status and frame, once. */
function final(id: string, status: StoredMessage["status"], extra: Partial<Change> = {}): Change {
  return {
    messages: [answer(id, { status, text: status ?? "" })],
    requireMessages: [id],
    requireStreaming: [id],
    outbox: [{ type: "message.stop", payload: { message_id: id, status } }],
    ...extra,
  };
}

/** Declares the fencing tests; `peer` is a second instance on the same data (or the storage again). */
export function describeFencingConformance(
  use: () => Storage,
  peer: () => Storage,
  capabilities: StorageCapabilities,
): void {
  const via = (i: number) => (i % 2 === 0 ? use() : peer());
  describe("fencing", () => {
    describeOneFinal(use, via);
    if (capabilities.fencing) describeLaneTokens(use, via);
    else
      describe(capabilityLabel("fencing", false, "not declared"), () => {
        test("fencing - without it, createGateway refuses a lane lock and names the capability", () => {
          const runtime = { async *turn() {} };
          expect(() => createGateway({ storage: use(), runtime, laneLock: memoryLaneLock() })).toThrow(/fencing/);
        });
      });
  });
}

/** `requireStreaming`: an answer is ended once, whoever tries to end it and however many at once. */
function describeOneFinal(use: () => Storage, via: (i: number) => Storage): void {
  test("requireStreaming - a change ending an answer applies while it streams, and never again", async () => {
    await use().commit(A, { channels: [channel("c1")], messages: [answer("a1")] });
    const first = await use().commit(A, final("a1", "interrupted"));
    expect(first.skipped).toBeFalsy();
    expect(first.seqs).toHaveLength(1);
    const second = await use().commit(A, final("a1", "complete"));
    expect(second).toEqual(expect.objectContaining({ skipped: true, seqs: [] }));
    expect((await use().getMessage(A, "a1"))?.status).toBe("interrupted");
    expect((await use().outboxBounds(A)).last).toBe(1);
    // A message that is gone or was never stored is not streaming either.
    expect((await use().commit(A, final("nope", "complete"))).skipped).toBe(true);
    expect(await use().getMessage(A, "nope")).toBeUndefined();
  });

  test("requireStreaming - a checkpoint after the final does not bring the answer back to streaming", async () => {
    await use().commit(A, { channels: [channel("c1")], messages: [answer("a1")] });
    await use().commit(A, final("a1", "stopped"));
    const late = await use().commit(A, { messages: [answer("a1", { text: "late" })], requireStreaming: ["a1"] });
    expect(late.skipped).toBe(true);
    expect(await use().getMessage(A, "a1")).toEqual(expect.objectContaining({ status: "stopped", text: "stopped" }));
  });

  test(`requireStreaming - of ${RACERS} finals of one answer at once, exactly one is stored with its frame`, async () => {
    await use().commit(A, { channels: [channel("c1")], messages: [answer("a1")] });
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) =>
        via(i).commit(A, final("a1", i % 2 ? "complete" : "interrupted", { answered: [] })),
      ),
    );
    const applied = results.filter((r) => !r.skipped);
    expect(applied).toHaveLength(1);
    const frames = await use().readOutbox(A, 0, 100);
    expect(frames).toHaveLength(1);
    expect(frames[0].seq).toBe(applied[0].seqs[0]);
    expect((await use().getMessage(A, "a1"))?.status).toBe(frames[0].payload.status);
  });
}

/** `takeLane` and `fence`: tokens only grow per lane; a write with a stale token applies nothing. */
function describeLaneTokens(use: () => Storage, via: (i: number) => Storage): void {
  describe(capabilityLabel("fencing", true), () => {
    test("fencing - takeLane gives each lane of each owner its own tokens, from 1, by one", async () => {
      await use().commit(A, { channels: [channel("c1"), thread("t1", "c1")] });
      expect((await use().commit(A, { takeLane: LANE })).fence).toBe(1);
      expect((await use().commit(A, { takeLane: LANE })).fence).toBe(2);
      expect((await use().commit(A, { takeLane: { chat_id: "c1", thread_id: "t1" } })).fence).toBe(1);
      expect((await use().commit(B, { takeLane: LANE })).fence).toBe(1);
      expect((await use().commit(A, { takeLane: LANE })).fence).toBe(3);
    });

    test("fencing - a write with the lane's token applies; once the lane is taken again, that token's writes apply nothing", async () => {
      await use().commit(A, { channels: [channel("c1")] });
      const token = (await use().commit(A, { takeLane: LANE })).fence!;
      const fence = { ...LANE, token };
      const held = await use().commit(A, { messages: [answer("a1")], fence, outbox: [{ type: "x", payload: {} }] });
      expect(held.skipped).toBeFalsy();
      expect((await use().commit(A, { takeLane: LANE })).fence).toBe(token + 1);
      const stale = await use().commit(A, {
        messages: [answer("a1", { text: "stale" })],
        deleteMessages: ["a1"],
        fence,
        outbox: [{ type: "x", payload: {} }],
      });
      expect(stale).toEqual(expect.objectContaining({ skipped: true, fenced: true, seqs: [] }));
      expect((await use().getMessage(A, "a1"))?.text).toBe("text of a1");
      expect((await use().outboxBounds(A)).last).toBe(1);
      // A token of one lane says nothing of another.
      expect((await use().commit(A, { fence: { chat_id: "c2", thread_id: null, token } })).fenced).toBe(true);
    });

    test(`fencing - of ${RACERS} processes taking a lane at once, each gets a token of its own`, async () => {
      await use().commit(A, { channels: [channel("c1")] });
      const tokens = await Promise.all(
        Array.from({ length: RACERS }, async (_, i) => (await via(i).commit(A, { takeLane: LANE })).fence),
      );
      expect([...tokens].sort((a, b) => a! - b!)).toEqual(Array.from({ length: RACERS }, (_, i) => i + 1));
    });

    test(`fencing - of ${RACERS} holders of one token taking the lane over at once, exactly one does`, async () => {
      await use().commit(A, { channels: [channel("c1")] });
      const token = (await use().commit(A, { takeLane: LANE })).fence!;
      const results = await Promise.all(
        Array.from({ length: RACERS }, (_, i) =>
          via(i).commit(A, {
            takeLane: LANE,
            fence: { ...LANE, token },
            messages: [answer(`a${i}`)],
            outbox: [{ type: "x", payload: { i } }],
          }),
        ),
      );
      const won = results.filter((r) => !r.skipped);
      expect(won).toHaveLength(1);
      expect(won[0].fence).toBe(token + 1);
      expect(results.filter((r) => r.fenced)).toHaveLength(RACERS - 1);
      expect(await use().readOutbox(A, 0, 100)).toHaveLength(1);
    });
  });
}
