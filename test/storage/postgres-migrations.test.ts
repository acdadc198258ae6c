import { describe, expect, test } from "vitest";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { MIGRATIONS } from "../../adapters/storage/postgres/schema.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { foundIds, msg, postgresSchemas, schemaAtVersion, withClient } from "./postgres-helpers.js";

const available = await postgresAvailable("storage: postgres migrations");

describe.skipIf(!available)("postgres storage - beyond the conformance suite", () => {
  const schemas = postgresSchemas();

  test("postgres - the schema is versioned, created once by processes starting together, and a newer one is refused", async () => {
    const fresh = `t_${runId()}`;
    try {
      const starters = Array.from({ length: 4 }, () =>
        postgresStorage({ connectionString: DATABASE_URL, schema: fresh, poolSize: 1 }),
      );
      await Promise.all(starters.map((s) => s.open?.()));
      await Promise.all(starters.map((s) => s.close?.()));
      await withClient(async (client) => {
        expect((await client.query(`SELECT version FROM "${fresh}".schema_version ORDER BY version`)).rows).toEqual(
          MIGRATIONS.map((_, i) => ({ version: i + 1 })),
        );
        await client.query(`INSERT INTO "${fresh}".schema_version (version) VALUES (99)`);
      });
      const newer = postgresStorage({ connectionString: DATABASE_URL, schema: fresh });
      await expect(newer.open!()).rejects.toThrow(/version 99, newer/);
      await newer.close?.();
    } finally {
      await dropSchema(fresh);
    }
  });

  test("postgres - a version 1 schema is migrated, and deleting a message or channel then redacts frames stored before the upgrade", async () => {
    const old = schemas.fresh();
    await withClient(async (client) => {
      await schemaAtVersion(client, old, 1);
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
      const s = await schemas.open(old);
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
    });
  });

  test("postgres - a version 1 schema is migrated in place: its messages stay searchable and its rows get their lane lexemes and search the newest-first index", async () => {
    const old = schemas.fresh();
    await withClient(async (client) => {
      await schemaAtVersion(client, old, 1);
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
        expect(await foundIds(s, "o", { query: "upgr", scope: "all", limit: 5 })).toEqual([
          "after",
          "kept",
          "kept-thread",
        ]);
        expect(await foundIds(s, "o", { query: "upgr", scope: "chat", chat_id: "c1", limit: 5 })).toEqual([
          "after",
          "kept",
          "kept-thread",
        ]);
        expect(
          await foundIds(s, "o", { query: "upgr", scope: "chat", chat_id: "c1", thread_id: "t1", limit: 5 }),
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
    });
  });
});
