// Snapshots of the sql.js storage are written by a snapshot process of their own, from the files,
// while the database process goes on answering. Real folders, real database and snapshot
// processes; a test-only hook (a JSON file the snapshot process reads at start) makes a snapshot
// slow or kills it half way.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { fixtureCommand } from "../fixtures/example-server-bundle.js";
import type { SqlJsStorage } from "chat-gateway/storage/sqljs";
import { alive, crashImage, files, openStorage, removeTempDirs, tempDir, until, write } from "./sqljs-helpers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const HOOK = "CHAT_GATEWAY_TEST_SQLJS_SNAPSHOT_HOOK";
let hookDir: string;

beforeAll(async () => {
  hookDir = await mkdtemp(join(tmpdir(), "cg-hook-"));
  process.env[HOOK] = join(hookDir, "hook.json");
});
afterAll(async () => {
  delete process.env[HOOK];
  await rm(hookDir, { recursive: true, force: true });
});
afterEach(removeTempDirs);

/** What the next snapshot processes do; returns the file each one notes "<pid> <generation>" in at start. */
async function hook(settings: { delayMs?: number; crash?: boolean; releaseFile?: string }): Promise<string> {
  const startedFile = join(hookDir, `started-${Date.now()}-${Math.random()}`);
  await writeFile(join(hookDir, "hook.json"), JSON.stringify({ ...settings, startedFile }));
  return startedFile;
}

/** Small thresholds, so a few writes make a snapshot due. */
const small = { snapshotMinBytes: 4096, snapshotMaxBytes: 4096 };

/** Whether a snapshot process has noted its start in `startedFile` (a whole line). */
function started(startedFile: string): boolean {
  return existsSync(startedFile) && readFileSync(startedFile, "utf8").endsWith("\n");
}

/** Writes until a snapshot process has started; resolves with how many were written. */
async function writeUntilStarted(storage: SqlJsStorage, startedFile: string, prefix: string): Promise<number> {
  let n = 0;
  while (!started(startedFile)) {
    await storage.commit("alice", write(`${prefix}${n++}`));
    if (n > 2000) throw new Error("no snapshot process started");
  }
  return n;
}

/** The snapshots, journals and temporary files of a folder (not its lock). */
async function data(dir: string): Promise<string[]> {
  return (await files(dir)).filter((n) => !n.startsWith("LOCK"));
}

async function outboxIds(dir: string): Promise<string[]> {
  const { storage, warnings } = await openStorage(dir);
  // Every entry, page by page: how many writes a test makes before a snapshot shows depends on the load.
  const ids: string[] = [];
  for (let after = 0; ; ) {
    const page = await storage.readOutbox("alice", after, 5000);
    if (page.length === 0) break;
    ids.push(...page.map((e) => String(e.payload.id)));
    after = page.at(-1)!.seq;
  }
  expect(warnings).toEqual([]);
  await storage.close();
  return ids;
}

describe("sql.js snapshots from a snapshot process", () => {
  test("snapshot process - writes and reads answer at once while a slow snapshot is produced; old files go only once it is written; a restart loads it and the journal since", {
    timeout: 90_000,
  }, async () => {
    const dir = await tempDir();
    // The snapshot is held until the test lets it go: the calls below answer while it is held.
    const releaseFile = join(hookDir, `release-${Date.now()}-${Math.random()}`);
    const startedFile = await hook({ releaseFile });
    const { storage, warnings } = await openStorage(dir, small);
    const before = await writeUntilStarted(storage, startedFile, "m");
    for (let i = 0; i < 20; i++) {
      await storage.commit("alice", write(`d${i}`));
      await storage.outboxBounds("alice");
    }
    // Still being produced: every one of those calls ran alongside it, not after it.
    expect(await data(dir)).toEqual(["journal-00000001.log", "journal-00000002.log"]);
    await writeFile(releaseFile, "");
    await until(async () => (await data(dir)).includes("snapshot-00000002.db"), "snapshot 2");
    // Superseded by snapshot 2 (which holds generation 1), and only now.
    await until(async () => !(await data(dir)).includes("journal-00000001.log"), "journal 1 removed");
    expect(await data(dir)).toEqual(["journal-00000002.log", "snapshot-00000002.db"]);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    for (const name of await files(dir)) expect((await stat(join(dir, name))).mode & 0o777).toBe(0o600);

    const image = await crashImage(dir);
    await storage.close();
    expect(warnings).toEqual([]);
    const expected = [
      ...Array.from({ length: before }, (_, i) => `m${i}`),
      ...Array.from({ length: 20 }, (_, i) => `d${i}`),
    ];
    expect(await outboxIds(image)).toEqual(expected);
    expect(await outboxIds(dir)).toEqual(expected);
  });

  test("snapshot process - one that crashes half way loses nothing, leaves no partial file, and a later one succeeds", {
    timeout: 90_000,
  }, async () => {
    const dir = await tempDir();
    const crashing = await hook({ crash: true });
    const { storage, warnings } = await openStorage(dir, small);
    const first = await writeUntilStarted(storage, crashing, "a");
    await until(() => warnings.length > 0, "the crash's warning");
    expect(warnings).toEqual([
      "sql.js storage: snapshot failed, the journal keeps everything: the snapshot process stopped (SIGKILL)",
    ]);
    expect(await data(dir)).toEqual(["journal-00000001.log", "journal-00000002.log"]);
    // A crash right now keeps every acknowledged write.
    expect(await outboxIds(await crashImage(dir))).toEqual(Array.from({ length: first }, (_, i) => `a${i}`));

    const again = await hook({});
    const second = await writeUntilStarted(storage, again, "b");
    expect(readFileSync(again, "utf8")).toMatch(/ 3\n$/);
    await until(
      async () => (await data(dir)).join() === "journal-00000003.log,snapshot-00000003.db",
      "snapshot 3 and its cleanup",
    );
    const expected = [
      ...Array.from({ length: first }, (_, i) => `a${i}`),
      ...Array.from({ length: second }, (_, i) => `b${i}`),
    ];
    expect(await outboxIds(await crashImage(dir))).toEqual(expected);
    await storage.close();
    expect(warnings).toHaveLength(1);
    expect(await outboxIds(dir)).toEqual(expected);
  });

  test("snapshot process - one that cannot write its file is a warning; the journals stay until a later one is written", {
    timeout: 90_000,
  }, async () => {
    const dir = await tempDir();
    await hook({});
    const { storage, warnings } = await openStorage(dir, small);
    // A folder where its temporary file goes makes the first snapshot's writer fail.
    const blocker = join(dir, "snapshot-00000002.db.tmp");
    await mkdir(blocker);
    let n = 0;
    while (!warnings.length) await storage.commit("alice", write(`m${n++}`));
    expect(warnings[0]).toMatch(/^sql\.js storage: snapshot failed, the journal keeps everything: .*EISDIR/);
    await rmdir(blocker);
    while (!(await data(dir)).includes("snapshot-00000003.db")) await storage.commit("alice", write(`m${n++}`));
    await storage.close();
    expect(warnings).toHaveLength(1);
    expect(await outboxIds(dir)).toEqual(Array.from({ length: n }, (_, i) => `m${i}`));
  });

  test("snapshot process - close does not wait for a slow one: it stops it and writes the closing snapshot itself", {
    timeout: 90_000,
  }, async () => {
    const dir = await tempDir();
    // The writer would take far longer than the test may run: close() returning at all proves it
    // did not wait for the writer, and the writer is gone.
    const startedFile = await hook({ delayMs: 600_000 });
    const { storage, warnings } = await openStorage(dir, small);
    const n = await writeUntilStarted(storage, startedFile, "m");
    const [pid] = (await readFile(startedFile, "utf8")).split(" ").map(Number);
    await storage.close();
    expect(alive(pid)).toBe(false);
    expect(warnings).toEqual([]);
    expect(await data(dir)).toEqual(["snapshot-00000003.db"]);
    expect(await outboxIds(dir)).toEqual(Array.from({ length: n }, (_, i) => `m${i}`));
  });

  test("snapshot process - it exits when the process that opened the storage is killed", {
    timeout: 90_000,
  }, async () => {
    const dir = await tempDir();
    const startedFile = await hook({ delayMs: 60_000 });
    const writer = spawn(...fixtureCommand("sqljs-crash-writer", [dir, "0"]), {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
    });
    await until(() => started(startedFile), "a snapshot process", 60_000);
    const [pid] = readFileSync(startedFile, "utf8").split(" ").map(Number);
    expect(alive(pid)).toBe(true);
    writer.kill("SIGKILL");
    await until(() => !alive(pid), "the snapshot process to exit", 10_000);
    const { storage } = await openStorage(dir);
    expect((await storage.outboxBounds("crash")).last).toBeGreaterThan(0);
    await storage.close();
  });
});
