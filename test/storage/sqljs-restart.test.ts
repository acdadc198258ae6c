import initSqlJs from "sql.js";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { SCHEMA_VERSION, SchemaTooNewError, sqlJsStorage } from "chat-gateway/storage/sqljs";
import { readSnapshot, writeSnapshot } from "../../adapters/storage/sqljs/snapshot.js";
import { crashImage, files, message, openStorage, removeTempDirs, tempDir, write } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

async function fill(dir: string, options = {}) {
  const { storage } = await openStorage(dir, options);
  await storage.commit("alice", {
    channels: [
      { chat_id: "c1", name: "General", kind: "default", parent_chat_id: null, is_default: true, archived: false },
    ],
    messages: [
      message("m1", {
        text: "Crème brûlée recipe",
        media: [{ media_id: "x1", kind: "image", mime: "image/png", size: 3, filename: "a.png" }],
      }),
    ],
    outbox: [
      { type: "channel.created", payload: { chat_id: "c1" } },
      { type: "message", payload: { message_id: "m1" } },
    ],
  });
  await storage.putDevice("alice", {
    device_id: "d1",
    device_name: "phone",
    caps: { min_protocol: 1, media: true, push: "ntfy", streaming: true },
    ntfy_topic: "t",
    last_seen: 5,
  });
  await storage.putMedia("alice", {
    media_id: "x1",
    kind: "image",
    mime: "image/png",
    size: 3,
    filename: "a.png",
    owner: "alice",
    sha256: "00",
    created_ts: 1,
  });
  await storage.putMedia("alice", {
    media_id: "x2",
    kind: "image",
    mime: "image/png",
    size: 3,
    filename: "b.png",
    owner: "alice",
    sha256: "00",
    created_ts: 1,
  });
  await storage.deleteMedia("alice", ["x2"]);
  await storage.commit("alice", { outbox: [{ type: "notification", payload: {} }] });
  // "No limit" must survive the journal too (JSON has no Infinity).
  await storage.pruneOutbox("alice", { maxFrames: Infinity, maxAgeMs: Infinity }, Date.now());
  await storage.pruneOutbox("alice", { maxFrames: 2, maxAgeMs: 86_400_000 }, Date.now());
  return storage;
}

/** The folder holds what `fill` wrote, under `owner` (alice, or whoever adopted her data). */
async function expectFilled(dir: string, owner = "alice") {
  const { storage, warnings } = await openStorage(dir);
  try {
    expect(warnings).toEqual([]);
    expect((await storage.getChannel(owner, "c1"))?.name).toBe("General");
    expect((await storage.getMessage(owner, "m1"))?.media[0].media_id).toBe("x1");
    // Devices and their push targets never move with an adoption.
    expect((await storage.getDevice("alice", "d1"))?.ntfy_topic).toBe("t");
    if (owner !== "alice") expect(await storage.getDevice(owner, "d1")).toBeUndefined();
    expect(await storage.getMedia(owner, "x1")).toBeDefined();
    expect(await storage.getMedia(owner, "x2")).toBeUndefined();
    expect(await storage.outboxBounds(owner)).toEqual({ first: 2, last: 3 });
    expect((await storage.search(owner, { query: "creme brul", scope: "all", limit: 5 }))[0]?.snippet).toBe(
      "Crème brûlée recipe",
    );
    expect((await storage.commit(owner, write("m2"))).seqs).toEqual([4]);
  } finally {
    await storage.close();
  }
}

describe("sql.js restart", () => {
  test("restart - an adoption, once it resolved, survives a crash whole, and a refused one leaves nothing behind", async () => {
    const dir = await tempDir();
    const storage = await fill(dir);
    await storage.putDevice("carol", {
      device_id: "c9",
      device_name: "tablet",
      caps: { min_protocol: 1, media: true, push: "none", streaming: true },
      last_seen: 1,
    });
    expect((await storage.adoptOwner("alice", "bob")).messages).toBe(1);
    await expect(storage.adoptOwner("bob", "carol")).rejects.toMatchObject({ code: "unsupported" });
    const image = await crashImage(dir);
    await storage.close();
    expect((await files(image)).every((n) => n.startsWith("journal-"))).toBe(true);
    await expectFilled(image, "bob");
    const { storage: again } = await openStorage(image);
    expect(await again.listChannels("alice")).toEqual([]);
    expect(await again.search("alice", { query: "creme", scope: "all", limit: 5 })).toEqual([]);
    expect((await again.listDevices("carol")).map((d) => d.device_id)).toEqual(["c9"]);
    await again.close();
  });

  test("restart - a clean close and open keeps everything", async () => {
    const dir = await tempDir();
    await (await fill(dir)).close();
    expect(await files(dir)).toEqual(["snapshot-00000002.db"]);
    await expectFilled(dir);
  });

  test("restart - a crash keeps everything acknowledged, replayed from the journal", async () => {
    const dir = await tempDir();
    const storage = await fill(dir);
    const image = await crashImage(dir);
    await storage.close();
    expect(await files(image)).toEqual(["journal-00000001.log"]);
    await expectFilled(image);
  });

  test("restart - opening a store again and again does not grow its snapshot past what was written", async () => {
    // Each open extends the file by a page so sql.js copies its array then, not at the first write;
    // the free pages that leaves must not pile up over restarts.
    const dir = await tempDir();
    const newestSize = async () => {
      const snaps = (await files(dir)).filter((n) => n.startsWith("snapshot-"));
      return (await readFile(join(dir, snaps.at(-1)!))).length;
    };
    let { storage } = await openStorage(dir);
    const long = (i: number) => message(`m${i}`, { text: `${"lorem ipsum dolor sit amet ".repeat(12)}${i}` });
    for (let i = 0; i < 2000; i += 500)
      await storage.commit("alice", { messages: Array.from({ length: 500 }, (_, k) => long(i + k)) });
    await storage.close();
    const first = await newestSize();
    for (let round = 0; round < 12; round++) {
      ({ storage } = await openStorage(dir));
      await storage.commit("alice", { messages: [long(10_000 + round)] });
      await storage.close();
    }
    // Twelve short messages take a few pages; the free list stays under 1/32 of the file.
    expect(await newestSize()).toBeLessThan(first * (1 + 1 / 32) + 12 * 2 * 4096);
    ({ storage } = await openStorage(dir));
    expect((await storage.history("alice", { chat_id: "c1", thread_id: null, limit: 3000 }))!.messages).toHaveLength(
      2012,
    );
    await storage.close();
  });

  test("restart - a crash after snapshots replays the newest snapshot plus the journal since", async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir, { snapshotMinBytes: 2048 });
    for (let i = 0; i < 200; i++) await storage.commit("alice", write(`m${i}`));
    // Let any snapshot that was scheduled finish before the image is taken.
    await new Promise((r) => setTimeout(r, 200));
    const image = await crashImage(dir);
    await storage.close();
    const names = await files(image);
    expect(names.filter((n) => n.startsWith("snapshot-")).length).toBeGreaterThanOrEqual(1);
    expect(names.filter((n) => n.startsWith("snapshot-")).length).toBeLessThanOrEqual(2);
    const { storage: again, warnings } = await openStorage(image);
    expect(warnings).toEqual([]);
    expect(await again.outboxBounds("alice")).toEqual({ first: 1, last: 200 });
    const page = (await again.history("alice", { chat_id: "c1", thread_id: null, limit: 200 }))!;
    expect(page.messages).toHaveLength(200);
    expect((await again.readOutbox("alice", 0, 500)).map((e) => e.payload.id)).toEqual(
      Array.from({ length: 200 }, (_, i) => `m${i}`),
    );
    await again.close();
  });

  test("restart - writes issued while a snapshot is written are all kept", async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir, { snapshotMinBytes: 1024 });
    await Promise.all(Array.from({ length: 300 }, (_, i) => storage.commit("alice", write(`m${i}`))));
    // Copying files one by one is not an atomic image, so let the background snapshot settle first.
    await new Promise((r) => setTimeout(r, 200));
    const image = await crashImage(dir);
    await storage.close();
    const { storage: again } = await openStorage(image);
    expect(await again.outboxBounds("alice")).toEqual({ first: 1, last: 300 });
    expect(new Set((await again.readOutbox("alice", 0, 500)).map((e) => e.payload.id)).size).toBe(300);
    await again.close();
  });

  test("schema - a fresh folder gets the current user_version", async () => {
    const dir = await tempDir();
    await (await fill(dir)).close();
    const SQL = await initSqlJs();
    const db = new SQL.Database(await readSnapshot(join(dir, "snapshot-00000002.db")));
    expect(db.exec("PRAGMA user_version")[0].values[0][0]).toBe(SCHEMA_VERSION);
    db.close();
  });

  test("schema - a database from a newer version is refused with a clear error and left alone", async () => {
    const dir = await tempDir();
    await (await fill(dir)).close();
    const SQL = await initSqlJs();
    const path = join(dir, "snapshot-00000002.db");
    const db = new SQL.Database(await readSnapshot(path));
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    await writeSnapshot(dir, 2, db.export());
    db.close();
    const before = await readFile(path);
    const storage = sqlJsStorage({ dir, onWarning: () => {} });
    const error = await storage.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SchemaTooNewError);
    expect((error as Error).message).toMatch(
      `schema version ${SCHEMA_VERSION + 1}, but this chat-gateway supports up to ${SCHEMA_VERSION}`,
    );
    expect(await readFile(path)).toEqual(before);
    expect(await files(dir)).toEqual(["snapshot-00000002.db"]);
  });

  test("options - misconfiguration throws TypeError at construction", () => {
    expect(() => sqlJsStorage({ dir: "" })).toThrow(TypeError);
    expect(() => sqlJsStorage({ dir: "x", snapshotRatio: -1 })).toThrow(TypeError);
    expect(() => sqlJsStorage({ dir: "x", snapshotIntervalMs: Number.NaN })).toThrow(TypeError);
    expect(() => sqlJsStorage(undefined as never)).toThrow(TypeError);
  });

  test("lifecycle - methods reject before open and after close", async () => {
    const dir = await tempDir();
    const storage = sqlJsStorage({ dir });
    await expect(storage.getChannel("a", "c")).rejects.toThrow(/not open/);
    await storage.open();
    await storage.close();
    await expect(storage.commit("a", {})).rejects.toThrow(/closed/);
  });
});
