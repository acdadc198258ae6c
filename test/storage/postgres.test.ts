import pg from "pg";
import { afterAll, describe, expect, test } from "vitest";
import type { Storage, StoredMessage } from "chat-gateway";
import { postgresStorage, type PostgresStorageOptions } from "chat-gateway/storage/postgres";
import { describeStorageConformance } from "../conformance/storage.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("storage conformance: postgres");

describe.skipIf(!available)("postgres", () => {
  describeStorageConformance("postgres", async () => {
    const schema = `t_${runId()}`;
    return { storage: postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }), cleanup: () => dropSchema(schema) };
  });
});

describe.skipIf(!available)("postgres storage - beyond the conformance suite", () => {
  const schema = `t_${runId()}`;
  const made: Storage[] = [];
  const open = async (extra: Partial<PostgresStorageOptions> = {}) => {
    const s = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4, ...extra });
    made.push(s);
    await s.open?.();
    return s;
  };
  afterAll(async () => {
    for (const s of made) await s.close?.();
    await dropSchema(schema);
  });
  const msg = (message_id: string, extra: Partial<StoredMessage> = {}): StoredMessage => ({
    message_id,
    role: "user",
    text: `text ${message_id}`,
    reasoning: "",
    ts: Date.now(),
    media: [],
    chat_id: "c1",
    thread_id: null,
    ...extra,
  });

  test("postgres - seq has no gaps and no repeats under concurrent writers on separate pools (processes)", async () => {
    const writers = await Promise.all([open(), open(), open()]);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => writers[i % 3].commit("racer", { outbox: Array.from({ length: 1 + (i % 3) }, () => ({ type: "message", payload: { i } })) })),
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
    await expect(s.commit("rollback", { channels: [{ chat_id: "\u0000bad", name: "n", kind: "channel", parent_chat_id: null, is_default: false, archived: false }], outbox: [{ type: "x", payload: {} }] })).rejects.toThrow();
    expect((await s.commit("rollback", { outbox: [{ type: "x", payload: {} }] })).seqs).toEqual([2]);
  });

  test("postgres - commits queued together share a transaction, and a bad one among them fails alone", async () => {
    const s = await open();
    const bad = { chat_id: "\u0000bad", name: "n", kind: "channel" as const, parent_chat_id: null, is_default: false, archived: false };
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => s.commit("group", { messages: [msg(`g${i}`)], outbox: [{ type: "message", payload: { i } }], ...(i === 2 ? { channels: [bad] } : {}) })),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled"]);
    expect(results.flatMap((r) => (r.status === "fulfilled" ? r.value.seqs : []))).toEqual([1, 2, 3, 4, 5]);
    expect(await s.getMessage("group", "g2")).toBeUndefined();
    expect((await s.readOutbox("group", 0, 10)).map((e) => e.payload.i)).toEqual([0, 1, 3, 4, 5]);
  });

  test("postgres - a second message with the same client_msg_id in a chat is refused, and findByClientMsgId finds the first (the race between processes)", async () => {
    const [p1, p2] = await Promise.all([open(), open()]);
    const [first, second] = await Promise.allSettled([
      p1.commit("dup", { messages: [msg("from-p1", { client_msg_id: "k" })], outbox: [{ type: "message", payload: {} }] }),
      p2.commit("dup", { messages: [msg("from-p2", { client_msg_id: "k", thread_id: "t1" })], outbox: [{ type: "message", payload: {} }] }),
    ]);
    expect([first.status, second.status].sort()).toEqual(["fulfilled", "rejected"]);
    const winner = first.status === "fulfilled" ? "from-p1" : "from-p2";
    expect((await p2.findByClientMsgId("dup", "c1", "k"))?.message_id).toBe(winner);
    expect(await p1.outboxBounds("dup")).toEqual({ first: 1, last: 1 });
    // Same key in another chat, or another owner, is a different message.
    await p1.commit("dup", { messages: [msg("other-chat", { client_msg_id: "k", chat_id: "c2" })] });
    await p1.commit("dup2", { messages: [msg("other-owner", { client_msg_id: "k" })] });
  });

  test("postgres - the schema is versioned, created once by processes starting together, and a newer one is refused", async () => {
    const fresh = `t_${runId()}`;
    try {
      const starters = Array.from({ length: 4 }, () => postgresStorage({ connectionString: DATABASE_URL, schema: fresh, poolSize: 1 }));
      await Promise.all(starters.map((s) => s.open?.()));
      await Promise.all(starters.map((s) => s.close?.()));
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        expect((await client.query(`SELECT version FROM "${fresh}".schema_version`)).rows).toEqual([{ version: 1 }]);
        await client.query(`INSERT INTO "${fresh}".schema_version (version) VALUES (99)`);
      } finally {
        await client.end();
      }
      const newer = postgresStorage({ connectionString: DATABASE_URL, schema: fresh });
      await expect(newer.open!()).rejects.toThrow(/version 99, newer/);
      await newer.close?.();
    } finally {
      await dropSchema(fresh);
    }
  });

  test("postgres - search runs on the GIN index of the tsvector", async () => {
    const s = await open();
    await s.commit("gin", { messages: Array.from({ length: 50 }, (_, i) => msg(`g${i}`, { text: `plain words number ${i}` })).concat(msg("needle", { text: "a rare zeppelin" })) });
    expect((await s.search("gin", { query: "zep", scope: "all", limit: 5 })).map((h) => h.message_id)).toEqual(["needle"]);
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = (await client.query(`EXPLAIN SELECT message_id FROM "${schema}".messages WHERE words @@ $1::tsquery`, ["'zep':*"])).rows.map((r) => Object.values(r)[0]).join("\n");
      expect(plan).toContain("messages_words");
    } finally {
      await client.end();
    }
  });

  test("postgres - misconfiguration is a TypeError at construction", () => {
    expect(() => postgresStorage({} as PostgresStorageOptions)).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, schema: "bad-name" })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, poolSize: 0 })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, pool: {} as never })).toThrow(TypeError);
  });
});
