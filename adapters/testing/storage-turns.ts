/**
 * Conformance of the durable turn queue (capability `waitingTurns`, docs/PROTOCOL.md §4.2) and of
 * the lane scope of `unfinishedMessages`: what lets every acknowledged message be answered once,
 * across crashes and processes. Part of {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage, StorageCapabilities } from "chat-gateway/storage";
import { A, B, capabilityLabel, channel, msg, thread } from "./storage-records.js";

function ids(list: Array<{ owner: string; message: { message_id: string } }>): string[] {
  return list.map((u) => `${u.owner}/${u.message.message_id}`);
}

/** Declares the turn queue's tests; `current` gives the storage of the running test. */
export function describeTurnsConformance(current: () => Storage, capabilities: StorageCapabilities): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });
  const use = () => storage;

  if (!capabilities.waitingTurns) {
    describeTurnsFallback(use);
    return;
  }
  describeWaitingTurns(use);
  if (capabilities.unfinishedMessages) describeUnfinishedScope(use);
}

/** Without the capability: no queue, so a crash loses the messages still waiting. */
function describeTurnsFallback(use: () => Storage): void {
  describe(capabilityLabel("waitingTurns", false), () => {
    test("waitingTurns - the fallback finds none: waiting messages are not kept across a crash", async () => {
      await use().commit(A, { messages: [msg("w1", { waiting: true })] });
      expect(await use().waitingTurns()).toEqual([]);
    });
  });
}

/** The queue: waiting messages listed by lane, a mark cleared with its answer and by nothing else. */
function describeWaitingTurns(use: () => Storage): void {
  describe(capabilityLabel("waitingTurns", true), () => {
    test("waitingTurns - lists waiting user messages of every owner, oldest first in each lane, and one lane with a scope", async () => {
      await use().commit(A, {
        channels: [channel("c1"), thread("t1", "c1")],
        messages: [msg("a2", { waiting: true }), msg("done"), msg("t", { waiting: true, thread_id: "t1" })],
      });
      await use().commit(A, { messages: [msg("a1", { waiting: true, ts: 1 })] });
      await use().commit(B, { channels: [channel("c1")], messages: [msg("b1", { waiting: true })] });
      const all = ids(await use().waitingTurns());
      expect([...all].sort()).toEqual([`${A}/a1`, `${A}/a2`, `${A}/t`, `${B}/b1`]);
      expect(all.indexOf(`${A}/a1`)).toBeLessThan(all.indexOf(`${A}/a2`));
      const lane = await use().waitingTurns({ owner: A, chat_id: "c1", thread_id: null });
      expect(ids(lane)).toEqual([`${A}/a1`, `${A}/a2`]);
      expect(lane[0].message).toEqual(expect.objectContaining({ role: "user", waiting: true, text: "text of a1" }));
      expect(ids(await use().waitingTurns({ owner: A, chat_id: "c1", thread_id: "t1" }))).toEqual([`${A}/t`]);
      expect(ids(await use().waitingTurns({ owner: B, chat_id: "c1", thread_id: "t1" }))).toEqual([]);
    });

    test("waitingTurns - the commit that stores an answer clears its message's mark in the same step, and nothing else", async () => {
      await use().commit(A, {
        channels: [channel("c1")],
        messages: [msg("q1", { waiting: true }), msg("q2", { waiting: true })],
      });
      const result = await use().commit(A, {
        messages: [msg("ans", { role: "assistant", status: "complete", reply_to: "q1" })],
        answered: ["q1"],
        outbox: [{ type: "message.stop", payload: { message_id: "ans" } }],
      });
      expect(result.seqs).toEqual([1]);
      expect(ids(await use().waitingTurns())).toEqual([`${A}/q2`]);
      const q1 = await use().getMessage(A, "q1");
      expect(q1?.waiting).toBeUndefined();
      expect(q1).toEqual(expect.objectContaining({ text: "text of q1", role: "user" }));
      // Answering again, or an unknown id, changes nothing.
      await use().commit(A, { answered: ["q1", "nope"] });
      expect(ids(await use().waitingTurns())).toEqual([`${A}/q2`]);
    });

    test("waitingTurns - answering a message deleted while it waited never brings it back", async () => {
      await use().commit(A, { channels: [channel("c1")], messages: [msg("gone", { waiting: true })] });
      await use().commit(A, { deleteMessages: ["gone"] });
      await use().commit(A, {
        answered: ["gone"],
        messages: [msg("late", { role: "assistant", status: "interrupted", reply_to: "gone" })],
      });
      expect(await use().getMessage(A, "gone")).toBeUndefined();
      expect(await use().waitingTurns()).toEqual([]);
    });

    test("waitingTurns - another owner's answered list never touches this owner's messages", async () => {
      await use().commit(A, { channels: [channel("c1")], messages: [msg("same", { waiting: true })] });
      await use().commit(B, { answered: ["same"] });
      expect(ids(await use().waitingTurns())).toEqual([`${A}/same`]);
    });
  });
}

/** The lane scope of `unfinishedMessages`: a storage may list more than the lane, never less. */
function describeUnfinishedScope(use: () => Storage): void {
  test("unfinishedMessages - with a scope, lists the streaming answers of that lane of that owner", async () => {
    await use().commit(A, {
      channels: [channel("c1"), thread("t1", "c1")],
      messages: [
        msg("s1", { role: "assistant", status: "streaming" }),
        msg("s2", { role: "assistant", status: "streaming", thread_id: "t1" }),
      ],
    });
    await use().commit(B, { messages: [msg("s3", { role: "assistant", status: "streaming" })] });
    // A storage may list more than the scope (the gateway filters), never less.
    const scoped = ids(await use().unfinishedMessages({ owner: A, chat_id: "c1", thread_id: null }));
    expect(scoped).toContain(`${A}/s1`);
    expect(ids(await use().unfinishedMessages({ owner: A, chat_id: "c1", thread_id: "t1" }))).toContain(`${A}/s2`);
  });
}
