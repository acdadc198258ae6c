/**
 * Conformance of the optional members: each capability's guarantees when the storage declares
 * it, and otherwise the core's fallback (or the gateway's refusal where there is none). Media
 * has a file of its own. Part of {@link describeStorageConformance}.
 * @module
 */
import { beforeEach, describe, expect, test } from "vitest";
import type { Storage, StorageCapabilities } from "chat-gateway/storage";
import { createGateway, memoryBus } from "chat-gateway";
import { A, B, capabilityLabel, channel, msg, sleep, thread } from "./storage-records.js";
import { describeTurnsConformance } from "./storage-turns.js";

/** A runtime for gateways that are only constructed, never started. */
const idleRuntime = { async *turn() {} };

/** Declares the capability tests; `current` gives the storage of the running test. */
export function describeCapabilitiesConformance(current: () => Storage, capabilities: StorageCapabilities): void {
  describeFindByClientMsgId(current, capabilities);
  describePruneOutbox(current, capabilities);
  describeUnfinishedMessages(current, capabilities);
  describeUniqueClientMsgId(current, capabilities);
  describeTurnsConformance(current, capabilities);
}

/** The lookup of a retried send, native or by paging through the chat. */
function describeFindByClientMsgId(current: () => Storage, capabilities: StorageCapabilities): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  describe(capabilityLabel("findByClientMsgId", capabilities.findByClientMsgId), () => {
    test("findByClientMsgId - finds the message in any lane of the chat, and only there", async () => {
      await storage.commit(A, {
        channels: [channel("c1"), thread("t1", "c1"), channel("c2")],
        messages: [
          msg("m1", { client_msg_id: "k1" }),
          msg("m2", { client_msg_id: "k2", thread_id: "t1" }),
          msg("m3", { client_msg_id: "k3", chat_id: "c2" }),
        ],
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
}

/** Retention: the policy applied, or everything kept. */
function describePruneOutbox(current: () => Storage, capabilities: StorageCapabilities): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });
  const use = () => storage;

  if (!capabilities.pruneOutbox) {
    describePruneFallback(use);
    return;
  }
  describe(capabilityLabel("pruneOutbox", true), () => {
    describePrunePolicy(use);
    describePruneEdges(use);
  });
}

/** What a policy drops: the oldest frames past its count, or those older than its age. */
function describePrunePolicy(use: () => Storage): void {
  test("pruneOutbox - prune by count keeps the newest frames and last", async () => {
    await use().commit(A, { outbox: Array.from({ length: 10 }, (_, i) => ({ type: "message", payload: { i } })) });
    await use().pruneOutbox(A, { maxFrames: 3, maxAgeMs: 86_400_000 }, Date.now());
    expect(await use().outboxBounds(A)).toEqual({ first: 8, last: 10 });
    expect((await use().readOutbox(A, 0, 100)).map((e) => e.seq)).toEqual([8, 9, 10]);
    expect((await use().commit(A, { outbox: [{ type: "message", payload: {} }] })).seqs).toEqual([11]);
  });

  test("pruneOutbox - prune by age drops only older frames", async () => {
    await use().commit(A, {
      outbox: [
        { type: "message", payload: { n: 1 } },
        { type: "message", payload: { n: 2 } },
      ],
    });
    await sleep(15);
    await use().commit(A, { outbox: [{ type: "message", payload: { n: 3 } }] });
    const [, , newest] = await use().readOutbox(A, 0, 10);
    await use().pruneOutbox(A, { maxFrames: 1000, maxAgeMs: 5 }, newest.ts + 5);
    expect((await use().readOutbox(A, 0, 10)).map((e) => e.seq)).toEqual([3]);
    expect(await use().outboxBounds(A)).toEqual({ first: 3, last: 3 });
  });
}

/** Pruning at its edges: everything, nothing, another owner's frames, redacted ones. */
function describePruneEdges(use: () => Storage): void {
  test("pruneOutbox - pruning everything keeps last and seqs are never reused", async () => {
    await use().commit(A, {
      outbox: [
        { type: "message", payload: {} },
        { type: "message", payload: {} },
      ],
    });
    await use().pruneOutbox(A, { maxFrames: 0, maxAgeMs: 86_400_000 }, Date.now());
    expect(await use().outboxBounds(A)).toEqual({ first: 3, last: 2 });
    expect(await use().readOutbox(A, 0, 10)).toEqual([]);
    await use().pruneOutbox(A, { maxFrames: 10, maxAgeMs: 0 }, Date.now() + 1000);
    expect(await use().outboxBounds(A)).toEqual({ first: 3, last: 2 });
    expect((await use().commit(A, { outbox: [{ type: "message", payload: {} }] })).seqs).toEqual([3]);
    expect(await use().outboxBounds(A)).toEqual({ first: 3, last: 3 });
  });

  test("pruneOutbox - an unlimited policy keeps everything", async () => {
    await use().commit(A, {
      outbox: [
        { type: "message", payload: {} },
        { type: "message", payload: {} },
      ],
    });
    await use().pruneOutbox(A, { maxFrames: Infinity, maxAgeMs: Infinity }, Date.now() + 1e9);
    expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 2 });
    expect(await use().readOutbox(A, 0, Infinity)).toHaveLength(2);
  });

  test("pruneOutbox - pruning one owner leaves the others alone", async () => {
    await use().commit(A, {
      outbox: [
        { type: "message", payload: {} },
        { type: "message", payload: {} },
      ],
    });
    await use().commit(B, {
      outbox: [
        { type: "message", payload: {} },
        { type: "message", payload: {} },
      ],
    });
    await use().pruneOutbox(A, { maxFrames: 0, maxAgeMs: 0 }, Date.now() + 1000);
    expect(await use().outboxBounds(B)).toEqual({ first: 1, last: 2 });
    expect(await use().readOutbox(B, 0, 10)).toHaveLength(2);
  });

  test("pruneOutbox - pruning still drops redacted frames from the front", async () => {
    await use().commit(A, {
      messages: [msg("m1")],
      outbox: [
        { type: "message", payload: { message_id: "m1", text: "secret" } },
        { type: "x", payload: {} },
        { type: "x", payload: {} },
      ],
    });
    await use().commit(A, { deleteMessages: ["m1"] });
    await use().pruneOutbox(A, { maxFrames: 1, maxAgeMs: Infinity }, Date.now());
    expect(await use().outboxBounds(A)).toEqual({ first: 3, last: 3 });
    expect((await use().readOutbox(A, 0, Infinity)).map((e) => e.seq)).toEqual([3]);
  });
}

/** Without the capability: the core's fallback keeps every frame. */
function describePruneFallback(use: () => Storage): void {
  describe(capabilityLabel("pruneOutbox", false), () => {
    test("pruneOutbox - the fallback keeps every frame, and the bounds do not move", async () => {
      await use().commit(A, {
        outbox: [
          { type: "message", payload: {} },
          { type: "message", payload: {} },
        ],
      });
      await use().pruneOutbox(A, { maxFrames: 0, maxAgeMs: 0 }, Date.now() + 1000);
      expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 2 });
      expect(await use().readOutbox(A, 0, 10)).toHaveLength(2);
    });
  });
}

/** Crash recovery's listing, or none without it. */
function describeUnfinishedMessages(current: () => Storage, capabilities: StorageCapabilities): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  if (capabilities.unfinishedMessages) {
    describe(capabilityLabel("unfinishedMessages", true), () => {
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
        expect(open.find((u) => u.owner === B)!.message).toEqual(
          expect.objectContaining({ thread_id: "t1", status: "streaming", role: "assistant" }),
        );
        await storage.commit(A, { messages: [msg("s1", { role: "assistant", status: "interrupted" })] });
        await storage.commit(B, { deleteMessages: ["s2"] });
        expect(await storage.unfinishedMessages()).toEqual([]);
      });
    });
  } else {
    describe(capabilityLabel("unfinishedMessages", false), () => {
      test("unfinishedMessages - the fallback finds none, so crash recovery has nothing to end", async () => {
        await storage.commit(A, { messages: [msg("s1", { role: "assistant", status: "streaming" })] });
        expect(await storage.unfinishedMessages()).toEqual([]);
      });
    });
  }
}

/** The unique key of a chat's client_msg_id, or the gateway's refusal of a shared bus without it. */
function describeUniqueClientMsgId(current: () => Storage, capabilities: StorageCapabilities): void {
  let storage: Storage;
  beforeEach(() => {
    storage = current();
  });

  if (capabilities.uniqueClientMsgId) {
    describe(capabilityLabel("uniqueClientMsgId", true), () => {
      test("uniqueClientMsgId - a second message with a chat's client_msg_id is refused and nothing of its change applies", async () => {
        await storage.commit(A, {
          channels: [channel("c1"), thread("t1", "c1")],
          messages: [msg("m1", { client_msg_id: "k" })],
        });
        const before = await storage.outboxBounds(A);
        await expect(
          storage.commit(A, {
            channels: [channel("c-new")],
            messages: [msg("m2", { client_msg_id: "k", thread_id: "t1" })],
            outbox: [{ type: "message", payload: {} }],
          }),
        ).rejects.toBeDefined();
        expect(await storage.getMessage(A, "m2")).toBeUndefined();
        expect(await storage.getChannel(A, "c-new")).toBeUndefined();
        expect(await storage.outboxBounds(A)).toEqual(before);
        // The holder itself may be stored again; other chats and owners may use the key.
        await storage.commit(A, { messages: [msg("m1", { client_msg_id: "k", text: "again" })] });
        await storage.commit(A, { messages: [msg("m3", { client_msg_id: "k", chat_id: "c2" })] });
        await storage.commit(B, { messages: [msg("m1", { client_msg_id: "k" })] });
      });

      test("uniqueClientMsgId - of sends racing with one key, exactly one is stored", async () => {
        const sends = Array.from({ length: 8 }, (_, i) =>
          storage.commit(A, { messages: [msg(`race-${i}`, { client_msg_id: "same" })] }),
        );
        const settled = await Promise.allSettled(sends);
        expect(settled.filter((s) => s.status === "fulfilled")).toHaveLength(1);
        const stored = await Promise.all(Array.from({ length: 8 }, (_, i) => storage.getMessage(A, `race-${i}`)));
        expect(stored.filter(Boolean)).toHaveLength(1);
      });
    });
  } else {
    describe(capabilityLabel("uniqueClientMsgId", false, "not declared"), () => {
      test("uniqueClientMsgId - without it, createGateway refuses a bus shared with other processes and names the capability", () => {
        const shared = { publish() {}, subscribe: () => () => undefined };
        expect(() => createGateway({ storage, runtime: idleRuntime, bus: shared })).toThrow(/uniqueClientMsgId/);
        expect(() => createGateway({ storage, runtime: idleRuntime, bus: memoryBus() })).not.toThrow();
      });
    });
  }
}
