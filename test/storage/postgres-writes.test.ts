import { describe, expect, test } from "vitest";
import { postgresAvailable } from "../fixtures/services.js";
import { msg, sharedSchema } from "./postgres-helpers.js";

const available = await postgresAvailable("storage: postgres writes");

describe.skipIf(!available)("postgres storage - beyond the conformance suite", () => {
  const { open } = sharedSchema({ poolSize: 4 });

  test("postgres - seq has no gaps and no repeats under concurrent writers on separate pools (processes)", async () => {
    const writers = await Promise.all([open(), open(), open()]);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        writers[i % 3].commit("racer", {
          outbox: Array.from({ length: 1 + (i % 3) }, () => ({ type: "message", payload: { i } })),
        }),
      ),
    );
    const seqs = results.flatMap((r) => r.seqs).sort((x, y) => x - y);
    const total = Array.from({ length: 60 }, (_, i) => 1 + (i % 3)).reduce((n, k) => n + k, 0);
    expect(seqs).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // Each commit's frames are consecutive, and the outbox holds exactly what was acknowledged.
    for (const r of results) expect(r.seqs.every((s, k) => k === 0 || s === r.seqs[k - 1] + 1)).toBe(true);
    expect((await writers[0].readOutbox("racer", 0, Infinity)).map((e) => e.seq)).toEqual(seqs);
    expect(await writers[1].outboxBounds("racer")).toEqual({ first: 1, last: total });
  });

  test("postgres - a failed transaction gives its seqs back", async () => {
    const s = await open();
    await s.commit("rollback", { outbox: [{ type: "x", payload: {} }] });
    await expect(
      s.commit("rollback", {
        channels: [
          {
            chat_id: "\u0000bad",
            name: "n",
            kind: "channel",
            parent_chat_id: null,
            is_default: false,
            archived: false,
          },
        ],
        outbox: [{ type: "x", payload: {} }],
      }),
    ).rejects.toThrow();
    expect((await s.commit("rollback", { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([2]);
  });

  test("postgres - commits queued together share a transaction, and a bad one among them fails alone", async () => {
    const s = await open();
    const bad = {
      chat_id: "\u0000bad",
      name: "n",
      kind: "channel" as const,
      parent_chat_id: null,
      is_default: false,
      archived: false,
    };
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        s.commit("group", {
          messages: [msg(`g${i}`)],
          outbox: [{ type: "message", payload: { i } }],
          ...(i === 2 ? { channels: [bad] } : {}),
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
      "fulfilled",
    ]);
    expect(results.flatMap((r) => (r.status === "fulfilled" ? r.value.seqs : []))).toEqual([1, 2, 3, 4, 5]);
    expect(await s.getMessage("group", "g2")).toBeUndefined();
    expect((await s.readOutbox("group", 0, 10)).map((e) => e.payload.i)).toEqual([0, 1, 3, 4, 5]);
  });

  test("postgres - a second message with the same client_msg_id in a chat is refused, and findByClientMsgId finds the first (the race between processes)", async () => {
    const [p1, p2] = await Promise.all([open(), open()]);
    const [first, second] = await Promise.allSettled([
      p1.commit("dup", {
        messages: [msg("from-p1", { client_msg_id: "k" })],
        outbox: [{ type: "message", payload: {} }],
      }),
      p2.commit("dup", {
        messages: [msg("from-p2", { client_msg_id: "k", thread_id: "t1" })],
        outbox: [{ type: "message", payload: {} }],
      }),
    ]);
    expect([first.status, second.status].sort()).toEqual(["fulfilled", "rejected"]);
    const winner = first.status === "fulfilled" ? "from-p1" : "from-p2";
    expect((await p2.findByClientMsgId("dup", "c1", "k"))?.message_id).toBe(winner);
    expect(await p1.outboxBounds("dup")).toEqual({ first: 1, last: 1 });
    // Same key in another chat, or another owner, is a different message.
    await p1.commit("dup", { messages: [msg("other-chat", { client_msg_id: "k", chat_id: "c2" })] });
    await p1.commit("dup2", { messages: [msg("other-owner", { client_msg_id: "k" })] });
  });

  test("postgres - two processes attaching one media to two messages at once: exactly one wins", async () => {
    const [p1, p2] = await Promise.all([open(), open()]);
    const record = {
      media_id: "shared",
      kind: "image" as const,
      mime: "image/png",
      size: 1,
      filename: "a.png",
      owner: "race",
      sha256: "00",
      created_ts: 1,
    };
    await p1.putMedia("race", record);
    const results = await Promise.allSettled([
      p1.commit("race", { messages: [msg("r1", { media: [record] })] }),
      p2.commit("race", { messages: [msg("r2", { media: [record] })] }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({ reason: { code: "unsupported" } });
    const holder = (await p1.getMedia("race", "shared"))?.message_id;
    expect(await p1.getMessage("race", holder === "r1" ? "r2" : "r1")).toBeUndefined();
  });

  test("postgres - a save requiring its message, racing a delete from another process, never brings the message or its text back", async () => {
    const [p1, p2] = await Promise.all([open(), open()]);
    for (let i = 0; i < 20; i++) {
      const id = `race-${i}`;
      await p1.commit("raced", { messages: [msg(id, { role: "assistant", status: "streaming", text: "" })] });
      await Promise.all([
        p1.commit("raced", { deleteMessages: [id] }),
        p2.commit("raced", {
          messages: [msg(id, { role: "assistant", text: `secret ${i}` })],
          outbox: [{ type: "message.stop", payload: { message_id: id, text: `secret ${i}` } }],
          requireMessages: [id],
        }),
      ]);
      expect(await p1.getMessage("raced", id)).toBeUndefined();
    }
    expect(JSON.stringify(await p1.readOutbox("raced", 0, Infinity))).not.toContain("secret");
  });
});
