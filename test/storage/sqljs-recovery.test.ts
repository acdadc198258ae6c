import { appendFile, mkdir, readFile, rmdir, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { recordingLogger } from "../fixtures/recording-logger.js";
import { crashImage, files, openStorage, removeTempDirs, tempDir, write } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

/** A crash image of a folder whose only journal holds `n` commits, m0 … m(n-1). */
async function journalOnly(n: number): Promise<string> {
  const dir = await tempDir();
  const { storage } = await openStorage(dir);
  for (let i = 0; i < n; i++) await storage.commit("alice", write(`m${i}`));
  const image = await crashImage(dir);
  await storage.close();
  expect(await files(image)).toEqual(["journal-00000001.log"]);
  return image;
}

async function ids(dir: string) {
  const { storage, warnings } = await openStorage(dir);
  const present = (await storage.readOutbox("alice", 0, 1000)).map((e) => e.payload.id);
  const messages = (await storage.history("alice", { chat_id: "c1", thread_id: null, limit: 200 }))!.messages.map(
    (m) => m.message_id,
  );
  return { storage, warnings, present, messages };
}

describe("sql.js recovery", () => {
  test("snapshot - one that cannot be written is a warning, and the journal keeps every write", async () => {
    const dir = await tempDir();
    const { storage, warnings } = await openStorage(dir);
    // A folder where the closing snapshot's temporary file goes makes its writer fail.
    const blocker = join(dir, "snapshot-00000002.db.tmp");
    await mkdir(blocker);
    for (let i = 0; i < 3; i++) await storage.commit("alice", write(`m${i}`));
    await storage.close();
    expect(warnings.join("\n")).toMatch(/snapshot failed, the journal keeps everything: .*EISDIR/);
    expect(await files(dir)).toEqual(["journal-00000001.log", "snapshot-00000002.db.tmp"]);

    await rmdir(blocker);
    const again = await ids(dir);
    expect(again.present).toEqual(["m0", "m1", "m2"]);
    expect(again.messages.sort()).toEqual(["m0", "m1", "m2"]);
    expect(again.warnings).toEqual([]);
    await again.storage.close();
  });

  test("journal - a torn last record is dropped with a warning and everything before it is kept", async () => {
    const dir = await journalOnly(5);
    const journal = join(dir, "journal-00000001.log");
    await truncate(journal, (await stat(journal)).size - 7);
    const { storage, warnings, present, messages } = await ids(dir);
    expect(present).toEqual(["m0", "m1", "m2", "m3"]);
    expect(messages.sort()).toEqual(["m0", "m1", "m2", "m3"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/journal-00000001\.log: torn record .*kept 4 records/);
    // The journal was cut back, so writes after the damage survive the next start.
    expect((await storage.commit("alice", write("after"))).seqs).toEqual([5]);
    const image = await crashImage(dir);
    await storage.close();
    const again = await ids(image);
    expect(again.warnings).toEqual([]);
    expect(again.present).toEqual(["m0", "m1", "m2", "m3", "after"]);
    await again.storage.close();
  });

  test("journal - a record with a bad checksum ends the replay there", async () => {
    const dir = await journalOnly(5);
    const journal = join(dir, "journal-00000001.log");
    const bytes = await readFile(journal);
    bytes[bytes.length - 3] ^= 0xff;
    await writeFile(journal, bytes);
    const { storage, warnings, present } = await ids(dir);
    expect(present).toEqual(["m0", "m1", "m2", "m3"]);
    expect(warnings[0]).toMatch(/checksum mismatch/);
    await storage.close();
  });

  test("journal - garbage after the last record is dropped and nothing is lost", async () => {
    const dir = await journalOnly(3);
    await appendFile(join(dir, "journal-00000001.log"), Buffer.from([7, 0, 0, 0, 1, 2, 3, 4, 5]));
    const { storage, warnings, present } = await ids(dir);
    expect(present).toEqual(["m0", "m1", "m2"]);
    expect(warnings).toHaveLength(1);
    await storage.close();
  });

  test("journal - a damaged record in an older generation keeps the later generations", async () => {
    const first = await journalOnly(3);
    const journal = join(first, "journal-00000001.log");
    await truncate(journal, (await stat(journal)).size - 1);
    // The start that drops the tail writes to a new generation.
    const { storage } = await openStorage(first);
    await storage.commit("alice", write("later"));
    const image = await crashImage(first);
    await storage.close();
    expect(await files(image)).toEqual(["journal-00000001.log", "journal-00000002.log"]);
    await appendFile(join(image, "journal-00000001.log"), Buffer.from("damage after the cut"));
    const again = await ids(image);
    expect(again.present).toEqual(["m0", "m1", "later"]);
    expect(again.warnings).toEqual([expect.stringMatching(/journal-00000001\.log/)]);
    await again.storage.close();
  });

  test("snapshot - a truncated newest snapshot falls back to the previous one and its journals", async () => {
    const dir = await tempDir();
    let s = (await openStorage(dir)).storage;
    await s.commit("alice", write("m0"));
    await s.close();
    s = (await openStorage(dir)).storage;
    await s.commit("alice", write("m1"));
    await s.close();
    expect(await files(dir)).toEqual(["journal-00000002.log", "snapshot-00000002.db", "snapshot-00000003.db"]);
    const newest = join(dir, "snapshot-00000003.db");
    await truncate(newest, (await stat(newest)).size - 100);
    const { storage, warnings, present } = await ids(dir);
    expect(present).toEqual(["m0", "m1"]);
    expect(warnings).toEqual([expect.stringMatching(/skipping snapshot .*snapshot-00000003\.db: .*truncated/)]);
    await storage.commit("alice", write("m2"));
    await storage.close();
    expect(await files(dir)).toContain("snapshot-00000003.db.damaged");
    const again = await ids(dir);
    expect(again.warnings).toEqual([]);
    expect(again.present).toEqual(["m0", "m1", "m2"]);
    await again.storage.close();
  });

  test("journal - a dropped tail is a warning on the given logger, and still reaches the deprecated onWarning", async () => {
    const dir = await journalOnly(3);
    const journal = join(dir, "journal-00000001.log");
    await truncate(journal, (await stat(journal)).size - 7);
    const image = await crashImage(dir);
    const logger = recordingLogger();
    const viaLogger = sqlJsStorage({ dir, logger });
    await viaLogger.open();
    expect(logger.lines.warn).toEqual([expect.stringMatching(/journal-00000001\.log: torn record .*kept 2 records/)]);
    expect(logger.lines.error).toEqual([]);
    await viaLogger.close();

    const legacy: string[] = [];
    const viaAlias = sqlJsStorage({ dir: image, onWarning: (m) => legacy.push(m) });
    await viaAlias.open();
    expect(legacy).toEqual([expect.stringMatching(/journal-00000001\.log: torn record .*kept 2 records/)]);
    await viaAlias.close();
  });

  test("snapshot - a truncated only snapshot is refused with a clear error, never overwritten", async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    await storage.commit("alice", write("m0"));
    await storage.close();
    const only = join(dir, "snapshot-00000002.db");
    await truncate(only, 1000);
    const before = await readFile(only);
    const again = sqlJsStorage({ dir, onWarning: () => {} });
    await expect(again.open()).rejects.toThrow(/no intact snapshot in .*refusing to start/);
    expect(await readFile(only)).toEqual(before);
    expect(await files(dir)).toEqual(["snapshot-00000002.db"]);
  });
});
