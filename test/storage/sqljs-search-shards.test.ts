import initSqlJs from "sql.js";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import { SCHEMA_VERSION } from "chat-gateway/storage/sqljs";
import { MIGRATIONS } from "../../adapters/storage/sqljs/schema.js";
import { SHARD_DOCS } from "../../adapters/storage/sqljs/fts-shards.js";
import { readSnapshot, writeSnapshot } from "../../adapters/storage/sqljs/snapshot.js";
import { laneColumn } from "../../adapters/storage/sqljs/search.js";
import { files, message, openStorage, removeTempDirs, tempDir } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

const owner = "alice";
const ids = (hits: Array<{ message_id: string }>) => hits.map((h) => h.message_id);

/** Message i of a long history: chat c1 or c2, "needle" only where asked. */
function nth(i: number, words = ""): StoredMessage {
  return message(`m${i}`, {
    text: `plain filler ${i} ${words}`.trim(),
    ts: 1_700_000_000_000 + i,
    chat_id: i % 2 ? "c1" : "c2",
  });
}

describe("sql.js search across index shards", () => {
  test("a history longer than one shard is searched whole, newest first, and follows edits, deletes and restarts", async () => {
    const dir = await tempDir();
    let { storage } = await openStorage(dir);
    const total = SHARD_DOCS + 4000;
    const early = 5; // row id 6: the first shard
    const late = total - 10; // the second shard
    for (let from = 0; from < total; from += 2000) {
      const messages: StoredMessage[] = [];
      for (let i = from; i < Math.min(total, from + 2000); i++)
        messages.push(nth(i, i === early || i === late ? "needle" : ""));
      await storage.commit(owner, { messages });
    }

    expect(ids(await storage.search(owner, { query: "needle", scope: "all", limit: 10 }))).toEqual([
      `m${late}`,
      `m${early}`,
    ]);
    expect(ids(await storage.search(owner, { query: "need", scope: "chat", chat_id: "c1", limit: 10 }))).toEqual([
      `m${early}`,
    ]);
    expect(ids(await storage.search(owner, { query: "needle", scope: "chat", chat_id: "c2", limit: 10 }))).toEqual([
      `m${late}`,
    ]);
    expect(await storage.search("bob", { query: "needle", scope: "all", limit: 10 })).toEqual([]);

    // An edit of a message in the old shard moves its index entry; a delete removes one in the new.
    await storage.commit(owner, { messages: [nth(early, "haystack")] });
    await storage.commit(owner, { deleteMessages: [`m${late}`] });
    expect(await storage.search(owner, { query: "needle", scope: "all", limit: 10 })).toEqual([]);
    expect(ids(await storage.search(owner, { query: "haystack", scope: "all", limit: 10 }))).toEqual([`m${early}`]);

    await storage.close();
    ({ storage } = await openStorage(dir));
    expect(ids(await storage.search(owner, { query: "haystack", scope: "chat", chat_id: "c1", limit: 10 }))).toEqual([
      `m${early}`,
    ]);
    expect(await storage.search(owner, { query: "needle", scope: "all", limit: 10 })).toEqual([]);
    // Every one of the common word's matches is reachable across the shard boundary.
    expect((await storage.search(owner, { query: "filler", scope: "all", limit: 3 })).map((h) => h.message_id)).toEqual(
      [`m${total - 1}`, `m${total - 2}`, `m${total - 3}`],
    );
    await storage.close();
  }, 60_000);

  test("a version 1 folder (one index for the whole history) is migrated to shards and searched as before", async () => {
    const dir = await tempDir();
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    db.exec(MIGRATIONS[0] as string);
    db.exec("PRAGMA user_version = 1");
    const old = [nth(1, "needle"), nth(2, "needle déjà"), nth(3)];
    old.forEach((m, row) => {
      const lane = laneColumn(owner, m.chat_id, null);
      db.run(
        "INSERT INTO messages (id, owner, message_id, chat_id, thread_key, ts, role, text, lane, data) VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?)",
        [
          row + 1,
          owner,
          m.message_id,
          m.chat_id,
          m.ts,
          m.role,
          m.text,
          lane,
          JSON.stringify({ ...m, text: undefined }),
        ],
      );
      db.run("INSERT INTO messages_fts (docid, text, lane) VALUES (?, ?, ?)", [row + 1, m.text, lane]);
    });
    await writeSnapshot(dir, 1, db.export());
    db.close();

    let { storage } = await openStorage(dir);
    expect(ids(await storage.search(owner, { query: "needle", scope: "all", limit: 10 }))).toEqual(["m2", "m1"]);
    expect(ids(await storage.search(owner, { query: "deja", scope: "chat", chat_id: "c2", limit: 10 }))).toEqual([
      "m2",
    ]);
    await storage.close();

    // The migrated database was snapshotted although nothing was written, so the next start does
    // not migrate again.
    const newest = (await files(dir)).filter((f) => f.startsWith("snapshot-")).at(-1)!;
    expect(newest).not.toBe("snapshot-00000001.db");
    const after = new SQL.Database(await readSnapshot(join(dir, newest)));
    expect(after.exec("PRAGMA user_version")[0].values[0][0]).toBe(SCHEMA_VERSION);
    expect(after.exec("SELECT count(*) FROM sqlite_master WHERE name = 'messages_fts'")[0].values[0][0]).toBe(0);
    after.close();

    ({ storage } = await openStorage(dir));
    await storage.commit(owner, { messages: [nth(4, "needle")] });
    expect(ids(await storage.search(owner, { query: "needle", scope: "all", limit: 10 }))).toEqual(["m4", "m2", "m1"]);
    await storage.close();
  });
});
