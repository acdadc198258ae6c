// The database process of the sql.js storage, seen from outside: it lives and dies with the
// process that opened the storage, its death fails calls with a clear error rather than a hang,
// and the folder it writes is the same one the in-process mode reads.
import initSqlJs from "sql.js";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import type { Change, StoredMessage } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { alive, message, openStorage, removeTempDirs, tempDir, write } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The processes `pid` started, from /proc. */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number),
  );
}

/** The database processes `pid` started: their entry is the storage's engine bundle. */
function databasesOf(pid: number): number[] {
  return childrenOf(pid).filter((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, "utf8").includes("sqljs-engine");
    } catch {
      return false;
    }
  });
}

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

describe("sql.js database process", () => {
  test("process - the database process exits when the process that opened the storage is killed", { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const writer = spawn(process.execPath, ["--import", "tsx", "test/fixtures/sqljs-crash-writer.ts", dir, "0"], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => writer.stdout.on("data", (chunk) => String(chunk).includes("ack") && resolve()));
    const [database] = databasesOf(writer.pid!);
    expect(database).toBeGreaterThan(0);
    writer.kill("SIGKILL");
    // Gone, so nothing writes to the folder once another process takes it over.
    expect(await until(() => !alive(database), 10_000)).toBe(true);
    const { storage } = await openStorage(dir);
    expect((await storage.outboxBounds("crash")).last).toBeGreaterThan(0);
    await storage.close();
  });

  test("process - a database process that dies fails every call with the reason, close still releases the folder, nothing acknowledged is lost", { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    await storage.commit("alice", write("m1"));
    const database = databasesOf(process.pid).find(alive);
    expect(database).toBeDefined();
    process.kill(database!, "SIGKILL");
    await until(() => !alive(database!), 10_000);
    await expect(storage.commit("alice", write("m2"))).rejects.toThrow(/the database process stopped \(SIGKILL\)/);
    await expect(storage.getMessage("alice", "m1")).rejects.toThrow(/the database process stopped/);
    await storage.close();

    const again = await openStorage(dir);
    expect((await again.storage.getMessage("alice", "m1"))?.text).toBe(message("m1").text);
    expect(await again.storage.getMessage("alice", "m2")).toBeUndefined();
    await again.storage.close();
  });

  test("process - calls made together cross to the database process together, and one that cannot be copied there fails alone", { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    // Same tick: one message to the database process. A function cannot cross a process boundary.
    const uncopyable = { ...write("bad"), outbox: [{ type: "message", payload: { id: "bad", f: () => 1 } }] } as unknown as Change;
    const results = await Promise.allSettled([
      storage.commit("alice", write("m1")),
      storage.commit("alice", uncopyable),
      storage.commit("alice", write("m2")),
      storage.getMessage("alice", "m1"),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/could not be cloned/);
    expect(((results[3] as PromiseFulfilledResult<StoredMessage | undefined>).value)?.text).toBe(message("m1").text);
    expect((await storage.readOutbox("alice", 0, 10)).map((e) => e.payload.id)).toEqual(["m1", "m2"]);
    await storage.close();
  });

  test("process - inProcess, or a given sqlJs module, runs on the calling thread, over the same folder format", { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const here = sqlJsStorage({ dir, inProcess: true });
    await here.open();
    expect(databasesOf(process.pid).filter(alive)).toEqual([]);
    await here.commit("alice", write("m1"));
    await here.close();

    const { storage } = await openStorage(dir);
    expect((await storage.getMessage("alice", "m1"))?.text).toBe(message("m1").text);
    await storage.commit("alice", write("m2"));
    await storage.close();
    // A ready sql.js module cannot move to another process: giving one runs on this thread too.
    const back = sqlJsStorage({ dir, sqlJs: await initSqlJs() });
    await back.open();
    expect(databasesOf(process.pid).filter(alive)).toEqual([]);
    expect((await back.readOutbox("alice", 0, 10)).map((e) => e.payload.id)).toEqual(["m1", "m2"]);
    await back.close();
  });
});
