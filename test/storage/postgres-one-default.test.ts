// PostgreSQL keeps one default channel per owner in the schema itself (migration 7): a database
// that concurrent `channel.set_default`s left with several defaults is repaired by the upgrade,
// and afterwards no write, from any process, can store a second one.
import pg from "pg";
import { afterAll, describe, expect, test } from "vitest";
import type { Channel } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { SCHEMA_VERSION } from "../../adapters/storage/postgres/schema.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("postgres one default");

const channel = (chat_id: string, is_default: boolean): Channel => ({
  chat_id,
  name: chat_id,
  kind: chat_id === "default" ? "default" : "channel",
  parent_chat_id: null,
  is_default,
  archived: false,
  created_ts: 1,
});

describe.skipIf(!available)("postgres - one default channel per owner", () => {
  const schema = `t_${runId()}`;
  const made: Storage[] = [];
  const open = async () => {
    const s = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2 });
    made.push(s);
    await s.open?.();
    return s;
  };
  afterAll(async () => {
    for (const s of made) await s.close?.();
    await dropSchema(schema);
  });

  test("the upgrade from the previous version keeps one default per owner (the General channel when it is one) and refuses a second one afterwards", async () => {
    const first = await open();
    await first.close?.();
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      // Back to the previous version, holding what the race left behind.
      // Version 7 is the one before the index (8); the later versions (9: outbox_type, 10: hooks, 11: read marks,
      // 12: schedules, 13: lane fences, 14: action tokens, 15: due pushes) go too.
      expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(8);
      await client.query(
        `DROP TABLE IF EXISTS "${schema}".due_pushes; DROP TABLE IF EXISTS "${schema}".action_tokens; DROP TABLE IF EXISTS "${schema}".lane_fences; DROP TABLE IF EXISTS "${schema}".schedules; DROP TABLE IF EXISTS "${schema}".read_marks; DROP INDEX IF EXISTS "${schema}".messages_assistant;
         DROP TABLE IF EXISTS "${schema}".hook_keys; DROP TABLE IF EXISTS "${schema}".hooks; DROP INDEX IF EXISTS "${schema}".outbox_type;
         DROP INDEX "${schema}".channels_one_default; DELETE FROM "${schema}".schema_version WHERE version >= 8`,
      );
      const rows: Array<[string, Channel]> = [
        ["alice", channel("c2", true)],
        ["alice", channel("default", true)],
        ["alice", channel("c1", true)],
        ["bob", channel("b2", true)],
        ["bob", channel("b1", true)],
        ["carol", channel("default", true)],
        ["dave", channel("default", false)],
      ];
      for (const [owner, c] of rows)
        await client.query(`INSERT INTO "${schema}".channels (owner, chat_id, data) VALUES ($1, $2, $3)`, [
          owner,
          c.chat_id,
          JSON.stringify(c),
        ]);
    } finally {
      await client.end();
    }
    const upgraded = await open();
    const defaults = async (owner: string) =>
      (await upgraded.listChannels(owner)).filter((c) => c.is_default).map((c) => c.chat_id);
    expect(await defaults("alice")).toEqual(["default"]);
    expect(await defaults("bob")).toEqual(["b1"]);
    expect(await defaults("carol")).toEqual(["default"]);
    expect(await defaults("dave")).toEqual([]);
    expect((await upgraded.listChannels("alice")).find((c) => c.chat_id === "c2")).toEqual(channel("c2", false));

    await expect(upgraded.commit("alice", { channels: [channel("c1", true)] })).rejects.toThrow();
    expect(await defaults("alice")).toEqual(["default"]);
    await upgraded.commit("alice", { channels: [channel("default", false), channel("c1", true)] });
    expect(await defaults("alice")).toEqual(["c1"]);
  });
});
