import pg from "pg";
import { afterAll, describe, expect, test } from "vitest";
import type { SearchQuery, Storage, StoredMessage } from "chat-gateway";
import { postgresStorage, type PostgresStorageOptions } from "chat-gateway/storage/postgres";
import { describeStorageConformance } from "chat-gateway/testing";
import { MIGRATIONS } from "../../adapters/storage/postgres/schema.js";
import { candidatesQuery } from "../../adapters/storage/postgres/search.js";
import { memoryStorage } from "chat-gateway/storage/memory";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("storage conformance: postgres");

describe.skipIf(!available)("postgres", () => {
  describeStorageConformance(
    "postgres",
    async () => {
      const schema = `t_${runId()}`;
      const instance = () => postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 });
      // The peer is a second process's storage on the same schema.
      return { storage: instance(), peer: instance(), reopen: instance, cleanup: () => dropSchema(schema) };
    },
    { persists: true },
  );
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

  test("postgres - the schema is versioned, created once by processes starting together, and a newer one is refused", async () => {
    const fresh = `t_${runId()}`;
    try {
      const starters = Array.from({ length: 4 }, () =>
        postgresStorage({ connectionString: DATABASE_URL, schema: fresh, poolSize: 1 }),
      );
      await Promise.all(starters.map((s) => s.open?.()));
      await Promise.all(starters.map((s) => s.close?.()));
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        expect((await client.query(`SELECT version FROM "${fresh}".schema_version ORDER BY version`)).rows).toEqual(
          MIGRATIONS.map((_, i) => ({ version: i + 1 })),
        );
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
      await client.query(
        `CREATE TABLE "${old}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      await client.query(`INSERT INTO "${old}".schema_version (version) VALUES (1)`);
      const frames: Array<[string, Record<string, unknown>]> = [
        ["channel.created", { chat_id: "c2", name: "secret channel" }],
        ["message", { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one" }],
        ["message.stop", { message_id: "m2", chat_id: "c2", thread_id: null, text: "secret two" }],
        ["message", { message_id: "m3", chat_id: "c1", thread_id: null, text: "kept three" }],
        ["notification", { kind: "generic", title: "secret notice", body: "b", ts: 1, chat_id: "c2", thread_id: null }],
      ];
      for (const [i, [type, payload]] of frames.entries()) {
        await client.query(
          `INSERT INTO "${old}".outbox (owner, seq, type, payload, ts) VALUES ('alice', $1, $2, $3, 1)`,
          [i + 1, type, JSON.stringify(payload)],
        );
      }
      await client.query(`INSERT INTO "${old}".owners (owner, last_seq) VALUES ('alice', $1)`, [frames.length]);
      const s = postgresStorage({ connectionString: DATABASE_URL, schema: old, poolSize: 2 });
      made.push(s);
      await s.open?.();
      await s.commit("alice", {
        channels: [
          { chat_id: "c2", name: "n", kind: "channel", parent_chat_id: null, is_default: false, archived: false },
        ],
        messages: [msg("m1"), msg("m2", { chat_id: "c2" }), msg("m3")],
      });
      await s.commit("alice", { deleteMessages: ["m1"] });
      await s.commit("alice", {
        deleteChannels: ["c2"],
        outbox: [{ type: "channel.deleted", payload: { chat_id: "c2" } }],
      });
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

  test("postgres - search runs on the GIN index of the tsvector", async () => {
    const s = await open();
    await s.commit("gin", {
      messages: Array.from({ length: 50 }, (_, i) => msg(`g${i}`, { text: `plain words number ${i}` })).concat(
        msg("needle", { text: "a rare zeppelin" }),
      ),
    });
    expect((await s.search("gin", { query: "zep", scope: "all", limit: 5 })).map((h) => h.message_id)).toEqual([
      "needle",
    ]);
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = (
        await client.query(`EXPLAIN SELECT message_id FROM "${schema}".message_search WHERE words @@ $1::tsquery`, [
          "'zep':*",
        ])
      ).rows
        .map((r) => Object.values(r)[0])
        .join("\n");
      expect(plan).toContain("messages_words");
    } finally {
      await client.end();
    }
  });

  test("postgres - a version 1 schema is migrated in place: its messages stay searchable and its rows get their lane lexemes and search the newest-first index", async () => {
    const old = `t_${runId()}`;
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query(
        `CREATE SCHEMA "${old}"; CREATE TABLE "${old}".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      await client.query(MIGRATIONS[0](`"${old}"`));
      await client.query(`INSERT INTO "${old}".schema_version (version) VALUES (1)`);
      const before = msg("kept", { text: "Written before the upgrade", ts: 5 });
      await client.query(
        `INSERT INTO "${old}".messages (owner, message_id, chat_id, thread_key, role, ts, text, words, data) VALUES ('o', 'kept', 'c1', '', 'user', 5, $1, $2::tsvector, $3)`,
        [before.text, "'written' 'before' 'the' 'upgrade'", JSON.stringify(before)],
      );
      const inThread = msg("kept-thread", { text: "Thread reply before the upgrade", ts: 4, thread_id: "t1" });
      await client.query(
        `INSERT INTO "${old}".messages (owner, message_id, chat_id, thread_key, role, ts, text, words, data) VALUES ('o', 'kept-thread', 'c1', 't1', 'user', 4, $1, $2::tsvector, $3)`,
        [inThread.text, "'thread' 'reply' 'before' 'the' 'upgrade'", JSON.stringify(inThread)],
      );
      const s = postgresStorage({ connectionString: DATABASE_URL, schema: old, poolSize: 2 });
      try {
        await s.commit("o", {
          messages: [msg("after", { text: "written after the upgrade", ts: 6, thread_id: "t1" })],
        });
        expect((await s.search("o", { query: "upgr", scope: "all", limit: 5 })).map((h) => h.message_id)).toEqual([
          "after",
          "kept",
          "kept-thread",
        ]);
        expect(
          (await s.search("o", { query: "upgr", scope: "chat", chat_id: "c1", limit: 5 })).map((h) => h.message_id),
        ).toEqual(["after", "kept", "kept-thread"]);
        expect(
          (await s.search("o", { query: "upgr", scope: "chat", chat_id: "c1", thread_id: "t1", limit: 5 })).map(
            (h) => h.message_id,
          ),
        ).toEqual(["after", "kept-thread"]);
        expect(await s.search("o", { query: "upgr", scope: "chat", chat_id: "c2", limit: 5 })).toEqual([]);
      } finally {
        await s.close?.();
      }
      expect((await client.query(`SELECT max(version) AS v FROM "${old}".schema_version`)).rows[0].v).toBe(
        MIGRATIONS.length,
      );
      const indexes = (
        await client.query(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`, [old])
      ).rows.map((r) => r.indexname);
      expect(indexes).toEqual(
        expect.arrayContaining([
          "messages_recent",
          "messages_words",
          "messages_lanes",
          "messages_chat_recent",
          "messages_thread_recent",
        ]),
      );
    } finally {
      await client.end();
      await dropSchema(old);
    }
  });

  test("postgres - a common word is walked newest first through messages_recent, a rare one read through GIN and never walked, a scoped one by its lane lexemes", async () => {
    const s = await open();
    // A varied vocabulary, so that the planner's statistics on the words are as on real text.
    const colours = ["red", "green", "blue", "cyan", "gray"];
    const text = (i: number) => `common ${colours[i % 5]}${i % 150} word ${i}${i === 7 ? " rarity" : ""}`;
    await s.commit("walk", {
      messages: Array.from({ length: 3000 }, (_, i) =>
        msg(`w${i}`, { text: text(i), ts: i, chat_id: `c${i % 3}`, thread_id: i % 10 === 0 ? "t1" : null }),
      ),
    });
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
      const plan = async (query: string, scope: Partial<SearchQuery> = {}, newest = false) => {
        const statement = candidatesQuery(
          `"${schema}"`,
          "walk",
          { query, scope: "all", limit: 20, ...scope },
          [query],
          "all",
          1000,
          { newest },
        );
        return (await client.query(`EXPLAIN ${statement.text}`, statement.values)).rows
          .map((r) => Object.values(r)[0])
          .join("\n");
      };
      expect(await plan("common", {}, true)).toContain("Index Scan Backward using messages_recent");
      expect(await plan("rarity")).toContain("messages_words");
      // Without the walk asked for, no plan walks, even for the word in every message: a prepared
      // statement's kept plan must not walk the whole history for a rare word.
      expect(await plan("common")).not.toContain("messages_recent");
      // A chat's lane-qualified lexeme: GIN, or on a table this small a scan; never the unscoped word.
      expect(await plan("common", { scope: "chat", chat_id: "c1" })).toContain(`'#c`);
    } finally {
      await client.end();
    }
    expect((await s.search("walk", { query: "rarity", scope: "all", limit: 5 })).map((h) => h.message_id)).toEqual([
      "w7",
    ]);
    expect((await s.search("walk", { query: "common", scope: "all", limit: 2 })).map((h) => h.message_id)).toEqual([
      "w2999",
      "w2998",
    ]);
    expect(
      (await s.search("walk", { query: "common", scope: "chat", chat_id: "c1", limit: 3 })).map((h) => h.message_id),
    ).toEqual(["w2998", "w2995", "w2992"]);
    expect(
      (await s.search("walk", { query: "com red", scope: "chat", chat_id: "c0", thread_id: "t1", limit: 2 })).map(
        (h) => h.message_id,
      ),
    ).toEqual(["w2990", "w2980"]);
  });

  test("postgres - search ranks and snips as the memory storage does, on ASCII and non-ASCII text alike", async () => {
    const pgStore = await open();
    const mem = memoryStorage();
    const words = [
      "alpha",
      "Alphabet",
      "ALPHA",
      "beta",
      "xalpha",
      "al-pha",
      "alpha.beta",
      "café",
      "Cafe\u0301",
      "Ärger",
      "arg",
      "2024",
      "v2",
      "naïve",
      "naive",
      "ﬁne",
      "İstanbul",
      "istanbul",
    ];
    const messages = Array.from({ length: 400 }, (_, i) => {
      const text = Array.from({ length: 3 + (i % 7) }, (_, k) => words[(i * 7 + k * 5) % words.length]).join(
        i % 3 ? " " : "  \n ",
      );
      return msg(`r${String(i).padStart(3, "0")}`, {
        text,
        ts: 1000 + (i % 50),
        chat_id: `c${i % 4}`,
        thread_id: i % 5 === 0 ? `t${i % 2}` : null,
      });
    });
    await pgStore.commit("rank", { messages });
    await mem.commit("rank", { messages });
    for (const query of [
      "alpha",
      "al",
      "alpha beta",
      "CAFÉ",
      "arg",
      "2024 v",
      "naive",
      "fine",
      "istanbul",
      "x",
      "beta zzz",
    ]) {
      for (const scope of [
        { scope: "all" as const },
        { scope: "chat" as const, chat_id: "c1" },
        { scope: "chat" as const, chat_id: "c0", thread_id: "t0" },
      ]) {
        for (const limit of [3, 50]) {
          const q = { query, limit, ...scope };
          expect(await pgStore.search("rank", q), JSON.stringify(q)).toEqual(await mem.search("rank", q));
        }
      }
    }
  });

  test("postgres - a message with more distinct words than a tsvector holds is stored, and its first words are found in every scope", async () => {
    const s = await open();
    const words = Array.from({ length: 60_000 }, (_, i) => `w${i.toString(36)}x`);
    await s.commit("huge", {
      messages: [msg("big", { text: `opening ${words.join(" ")}`, chat_id: "c9", thread_id: "t9" })],
    });
    for (const scope of [
      { scope: "all" as const },
      { scope: "chat" as const, chat_id: "c9" },
      { scope: "chat" as const, chat_id: "c9", thread_id: "t9" },
    ]) {
      expect(
        (await s.search("huge", { query: "opening w1x", limit: 5, ...scope })).map((h) => h.message_id),
        JSON.stringify(scope),
      ).toEqual(["big"]);
    }
  });

  test("postgres - misconfiguration is a TypeError at construction", () => {
    expect(() => postgresStorage({} as PostgresStorageOptions)).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, schema: "bad-name" })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, poolSize: 0 })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, pool: {} as never })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, preparedStatements: "yes" as never })).toThrow(
      TypeError,
    );
  });
});
