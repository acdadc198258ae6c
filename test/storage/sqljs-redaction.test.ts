import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import initSqlJs from "sql.js";
import { afterEach, describe, expect, test } from "vitest";
import { SCHEMA_VERSION } from "chat-gateway/storage/sqljs";
import { encodeRecord, journalName } from "../../adapters/storage/sqljs/journal.js";
import { MIGRATIONS } from "../../adapters/storage/sqljs/schema.js";
import { writeSnapshot } from "../../adapters/storage/sqljs/snapshot.js";
import { Sql } from "../../adapters/storage/sqljs/sql.js";
import { message, openStorage, removeTempDirs, tempDir } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

const owner = "alice";

describe("sql.js redaction of outbox frames written before version 3", () => {
  test("a version 2 folder is migrated, and deleting a message or channel then redacts frames stored before the upgrade", async () => {
    const dir = await tempDir();
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    const sql = new Sql(db);
    for (const step of MIGRATIONS.slice(0, 2)) {
      if (typeof step === "string") db.exec(step);
      else step(sql);
    }
    db.exec("PRAGMA user_version = 2");
    const frames: Array<[string, Record<string, unknown>]> = [
      ["channel.created", { chat_id: "c2", name: "secret channel" }],
      ["message", { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one" }],
      ["message", { message_id: "m2", chat_id: "c2", thread_id: null, text: "secret two" }],
      ["message", { message_id: "m3", chat_id: "c1", thread_id: null, text: "kept three" }],
    ];
    frames.forEach(([type, payload], i) => {
      db.run("INSERT INTO outbox (owner, seq, ts, type, payload) VALUES (?, ?, ?, ?, ?)", [
        owner,
        i + 1,
        1_700_000_000_000,
        type,
        JSON.stringify(payload),
      ]);
    });
    db.run("INSERT INTO outbox_last (owner, last) VALUES (?, ?)", [owner, frames.length]);
    sql.free();
    await writeSnapshot(dir, 1, db.export());
    db.close();

    const { storage } = await openStorage(dir);
    await storage.commit(owner, {
      channels: [
        { chat_id: "c2", name: "n", kind: "channel", parent_chat_id: null, is_default: false, archived: false },
      ],
      messages: [message("m1"), message("m2", { chat_id: "c2" }), message("m3")],
    });
    await storage.commit(owner, { deleteMessages: ["m1"] });
    await storage.commit(owner, {
      deleteChannels: ["c2"],
      outbox: [{ type: "channel.deleted", payload: { chat_id: "c2" } }],
    });
    const left = await storage.readOutbox(owner, 0, Infinity);
    expect(JSON.stringify(left)).not.toContain("secret");
    expect(left.map((e) => e.seq)).toEqual([4, 5]);
    expect(await storage.outboxBounds(owner)).toEqual({ first: 1, last: 5 });
    await storage.close();
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(3);
  });
});

describe("sql.js redaction of outbox frames journaled before the core handed in their keys", () => {
  test("a journal record without redactKey (written by an older version, then a crash) replays, and deleting then redacts its frames", async () => {
    const dir = await tempDir();
    // A commit as an older version journaled it: its frames carry no redactKey.
    const old = {
      k: "commit",
      o: owner,
      t: 1_700_000_000_000,
      c: {
        channels: [
          {
            chat_id: "c2",
            name: "secret channel",
            kind: "channel",
            parent_chat_id: null,
            is_default: false,
            archived: false,
          },
        ],
        messages: [message("m1"), message("m2", { chat_id: "c2" }), message("m3")],
        outbox: [
          { type: "channel.created", payload: { chat_id: "c2", name: "secret channel" } },
          { type: "message", payload: { message_id: "m1", chat_id: "c1", thread_id: null, text: "secret one" } },
          { type: "message", payload: { message_id: "m2", chat_id: "c2", thread_id: null, text: "secret two" } },
          { type: "message", payload: { message_id: "m3", chat_id: "c1", thread_id: null, text: "kept three" } },
        ],
      },
    };
    await writeFile(join(dir, journalName(1)), encodeRecord(JSON.stringify(old)));

    const { storage, warnings } = await openStorage(dir);
    expect((await storage.readOutbox(owner, 0, Infinity)).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    await storage.commit(owner, { deleteMessages: ["m1"] });
    await storage.commit(owner, {
      deleteChannels: ["c2"],
      outbox: [{ type: "channel.deleted", payload: { chat_id: "c2" } }],
    });
    const left = await storage.readOutbox(owner, 0, Infinity);
    expect(JSON.stringify(left)).not.toContain("secret");
    expect(left.map((e) => [e.seq, e.type])).toEqual([
      [4, "message"],
      [5, "channel.deleted"],
    ]);
    expect(warnings).toEqual([]);
    await storage.close();
  });
});
