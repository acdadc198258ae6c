import pg from "pg";
import { afterAll, describe, expect, test } from "vitest";
import type { Storage, StoredMessage } from "chat-gateway";
import { postgresStorage, type PostgresStorageOptions } from "chat-gateway/storage/postgres";
import { MIGRATIONS } from "../../adapters/storage/postgres/schema.js";
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
        expect((await client.query(`SELECT version FROM "${fresh}".schema_version ORDER BY version`)).rows).toEqual([{ version: 1 }, { version: 2 }]);
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

  test("postgres - a version 1 schema is migrated, and deleting a message or channel then redacts frames stored before the upgrade", async () => {
    const old = `t_${runId()}`;
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA "${old}"`);
      await client.query(MIGRATIONS[0](`"${old}"`));
      await client.query(`CREATE TABLE "${old}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      await client.query(`INSERT INTO "${old}".schema_version (version) VALUES (1)`);
      const frames: Array<[string, Record<string, unknown>]> = [
        ["channel.created", { chat_id: "c2", name: "secret channel" }],
        ["message", { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one" }],
        ["message.stop", { message_id: "m2", chat_id: "c2", thread_id: null, text: "secret two" }],
        ["message", { message_id: "m3", chat_id: "c1", thread_id: null, text: "kept three" }],
        ["notification", { kind: "generic", title: "secret notice", body: "b", ts: 1, chat_id: "c2", thread_id: null }],
      ];
      for (const [i, [type, payload]] of frames.entries()) {
        await client.query(`INSERT INTO "${old}".outbox (owner, seq, type, payload, ts) VALUES ('alice', $1, $2, $3, 1)`, [i + 1, type, JSON.stringify(payload)]);
      }
      await client.query(`INSERT INTO "${old}".owners (owner, last_seq) VALUES ('alice', $1)`, [frames.length]);
      const s = postgresStorage({ connectionString: DATABASE_URL, schema: old, poolSize: 2 });
      made.push(s);
      await s.open?.();
      await s.commit("alice", { channels: [{ chat_id: "c2", name: "n", kind: "channel", parent_chat_id: null, is_default: false, archived: false }], messages: [msg("m1"), msg("m2", { chat_id: "c2" }), msg("m3")] });
      await s.commit("alice", { deleteMessages: ["m1"] });
      await s.commit("alice", { deleteChannels: ["c2"], outbox: [{ type: "channel.deleted", payload: { chat_id: "c2" } }] });
      const left = await s.readOutbox("alice", 0, Infinity);
      expect(JSON.stringify(left)).not.toContain("secret");
      expect(left.map((e) => e.seq)).toEqual([4, 6]);
      expect(await s.outboxBounds("alice")).toEqual({ first: 1, last: 6 });
    } finally {
      await client.end();
      await dropSchema(old);
    }
  });

  test("postgres - two processes attaching one media to two messages at once: exactly one wins", async () => {
    const [p1, p2] = await Promise.all([open(), open()]);
    const record = { media_id: "shared", kind: "image" as const, mime: "image/png", size: 1, filename: "a.png", owner: "race", sha256: "00", created_ts: 1 };
    await p1.putMedia("race", record);
    const results = await Promise.allSettled([p1.commit("race", { messages: [msg("r1", { media: [record] })] }), p2.commit("race", { messages: [msg("r2", { media: [record] })] })]);
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
        p2.commit("raced", { messages: [msg(id, { role: "assistant", text: `secret ${i}` })], outbox: [{ type: "message.stop", payload: { message_id: id, text: `secret ${i}` } }], requireMessages: [id] }),
      ]);
      expect(await p1.getMessage("raced", id)).toBeUndefined();
    }
    expect(JSON.stringify(await p1.readOutbox("raced", 0, Infinity))).not.toContain("secret");
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
