// The sql.js storage answers `outboxBounds` again from what it read, until a write that may move
// the bounds is sent (a device asks at hello and again at sync, and so does every other device of
// its owner). What it answers must stay what the database holds: a read sent after a write sees
// it, however the two interleave, after a prune and an adoption, and after the database process
// was killed with writes and reads in flight.
import initSqlJs, { type SqlJsStatic } from "sql.js";
import { afterEach, describe, expect, test } from "vitest";
import type { OutboxBounds } from "chat-gateway/storage";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { databaseOf, openStorage, removeTempDirs, tempDir, until, write } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

/** A sql.js module that counts how often the database works out an owner's bounds. */
async function countingSqlJs(): Promise<{ sqlJs: SqlJsStatic; boundsRead: () => number }> {
  const sqlJs = await initSqlJs();
  let reads = 0;
  const prepare = sqlJs.Database.prototype.prepare;
  sqlJs.Database.prototype.prepare = function (this: InstanceType<SqlJsStatic["Database"]>, sql, params) {
    const statement = prepare.call(this, sql, params);
    if (/min\(seq\) FROM outbox/.test(sql)) {
      const step = statement.step.bind(statement);
      statement.step = () => {
        reads++;
        return step();
      };
    }
    return statement;
  };
  return { sqlJs, boundsRead: () => reads };
}

const frame = (id: string) => ({ outbox: [{ type: "notification", payload: { id } }] });

describe("sql.js: outbox bounds read again", () => {
  test("the database works out an owner's bounds once until a write may move them", async () => {
    const { sqlJs, boundsRead } = await countingSqlJs();
    const storage = sqlJsStorage({ dir: await tempDir(), sqlJs });
    await storage.open();
    try {
      await storage.commit("ann", frame("a1"));
      const before = boundsRead();
      // Many devices of one owner at once, and again later: one read of the database.
      const all = await Promise.all(Array.from({ length: 20 }, () => storage.outboxBounds("ann")));
      expect(all).toEqual(Array.from({ length: 20 }, () => ({ first: 1, last: 1 })));
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 1 });
      expect(boundsRead() - before).toBe(1);

      // A device record, or a commit without outbox frames, leaves them where they were.
      await storage.putDevice("ann", { device_id: "d1", device_name: "", caps: {} as never, last_seen: 1 });
      await storage.commit("ann", { channels: [{ chat_id: "c1", name: "one", created_at: 1 }] as never });
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 1 });
      expect(boundsRead() - before).toBe(1);

      // Frames move them: the next read goes to the database; another owner's stays as read.
      await storage.commit("bob", frame("b1"));
      expect(await storage.outboxBounds("bob")).toEqual({ first: 1, last: 1 });
      await storage.commit("ann", frame("a2"));
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 2 });
      expect(await storage.outboxBounds("bob")).toEqual({ first: 1, last: 1 });
      expect(boundsRead() - before).toBe(3);

      // A read sent while such a write is in flight is not kept (a write may wait where a read
      // does not): the next read goes to the database again, and is kept.
      const writing = storage.commit("ann", frame("a3"));
      const during = storage.outboxBounds("ann");
      await writing;
      expect((await during).last).toBeGreaterThanOrEqual(2);
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 3 });
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 3 });
      expect(boundsRead() - before).toBe(5);

      // An answer is a copy: changing it changes nothing stored.
      (await storage.outboxBounds("ann")).last = 99;
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 3 });
    } finally {
      await storage.close();
    }
  });

  // In the database process reads wait for a turn and writes apply as they come; on this thread
  // (a given sql.js module) each goes in order: two interleavings of a read sent before a write.
  test.each([
    ["in the database process", false],
    ["on this thread", true],
  ])("a read sent after a write sees it, with many of both in flight at once (%s)", async (_, here) => {
    const { storage } = await openStorage(await tempDir(), here ? { sqlJs: await initSqlJs() } : {});
    try {
      await storage.outboxBounds("ann");
      const commits: Array<Promise<unknown>> = [];
      const reads: Array<{ after: number; bounds: Promise<OutboxBounds> }> = [];
      for (let i = 1; i <= 60; i++) {
        commits.push(storage.commit("ann", frame(`m${i}`)));
        // Reads in flight before, between and after the writes, some of them sharing one.
        reads.push({ after: i, bounds: storage.outboxBounds("ann") });
        if (i % 3 === 0) reads.push({ after: i, bounds: storage.outboxBounds("ann") });
      }
      await Promise.all(commits);
      for (const read of reads) expect((await read.bounds).last).toBeGreaterThanOrEqual(read.after);
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 60 });
    } finally {
      await storage.close();
    }
  });

  test("a prune and an adoption move the bounds they change", async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    try {
      for (let i = 1; i <= 5; i++) await storage.commit("ann", write(`m${i}`));
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 5 });
      await storage.pruneOutbox("ann", { maxFrames: 2, maxAgeMs: Number.POSITIVE_INFINITY }, Date.now());
      expect(await storage.outboxBounds("ann")).toEqual({ first: 4, last: 5 });

      expect(await storage.outboxBounds("carl")).toEqual({ first: 1, last: 0 });
      expect(await storage.adoptOwner("ann", "carl")).toMatchObject({ outbox: 2 });
      expect(await storage.outboxBounds("carl")).toEqual({ first: 4, last: 5 });
      // The adopted owner's seqs are never given out again: nothing left, the last seq kept.
      expect(await storage.outboxBounds("ann")).toEqual({ first: 6, last: 5 });
    } finally {
      await storage.close();
    }
    // What was answered is what the database holds after a restart.
    const { storage: again } = await openStorage(dir);
    try {
      expect(await again.outboxBounds("carl")).toEqual({ first: 4, last: 5 });
    } finally {
      await again.close();
    }
  });

  test("a closed storage refuses the read it would have answered", async () => {
    const { storage } = await openStorage(await tempDir());
    await storage.commit("ann", frame("a1"));
    expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 1 });
    await storage.close();
    await expect(storage.outboxBounds("ann")).rejects.toThrow(/closed/);
  });

  test("the database process killed with writes and reads of the bounds in flight: what is read after is what it kept", async () => {
    const { storage } = await openStorage(await tempDir());
    try {
      await storage.commit("ann", frame("a0"));
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: 1 });
      const database = await databaseOf(process.pid);
      // Five devices' worth of writes, each followed by a read of the bounds, until the database
      // process dies under them, part of the way through.
      let acked = 0;
      let dead = false;
      const stream = async (who: number) => {
        for (let n = 0; !dead; n++) {
          const written = await storage.commit("ann", frame(`s${who}-${n}`)).then(
            () => true,
            () => false,
          );
          const read = await storage.outboxBounds("ann").catch(() => undefined);
          if (!written || !read) return;
          if (++acked === 10) {
            dead = true;
            process.kill(database, "SIGKILL");
          }
        }
      };
      await Promise.all([0, 1, 2, 3, 4].map(stream));
      expect(acked).toBeGreaterThanOrEqual(10);
      await until(
        () =>
          storage.outboxBounds("bob").then(
            () => true,
            () => false,
          ),
        "the database process started again",
      );
      // Whatever of the writes in flight was kept, the bounds are the outbox's own.
      const stored = await storage.readOutbox("ann", 0, 100);
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: stored.at(-1)!.seq });
      await storage.commit("ann", frame("after"));
      expect(await storage.outboxBounds("ann")).toEqual({ first: 1, last: stored.at(-1)!.seq + 1 });
    } finally {
      await storage.close();
    }
  });
});
