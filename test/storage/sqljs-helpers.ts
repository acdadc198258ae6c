import { readdirSync, readFileSync } from "node:fs";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { StoredMessage } from "chat-gateway";
import type { Change } from "chat-gateway/storage";
import { sqlJsStorage, type SqlJsStorageOptions } from "chat-gateway/storage/sqljs";
import { recordingLogger } from "../fixtures/recording-logger.js";

const dirs: string[] = [];

/** A fresh temporary folder, removed by {@link removeTempDirs}. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "cg-sqljs-"));
  dirs.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/**
 * What a crash right now would leave on disk: a copy of the folder while the storage is still
 * open, without its lock (the copying process is alive, so its lock would not be stale).
 */
export async function crashImage(dir: string): Promise<string> {
  // A background snapshot may delete a file between listing and copying; copy again until the
  // folder holds still for one whole copy.
  for (let attempt = 0; ; attempt++) {
    const copy = await tempDir();
    try {
      await cp(dir, copy, { recursive: true, filter: (src) => basename(src) !== "LOCK" });
      return copy;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt === 20) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export async function files(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/** Opens a storage and collects its warnings. */
export async function openStorage(dir: string, options: Partial<SqlJsStorageOptions> = {}) {
  const logger = recordingLogger();
  const storage = sqlJsStorage({ dir, logger, ...options });
  await storage.open();
  return { storage, warnings: logger.lines.warn };
}

export function message(id: string, extra: Partial<StoredMessage> = {}): StoredMessage {
  return {
    message_id: id,
    role: "user",
    text: `words of ${id}`,
    reasoning: "",
    ts: 1_700_000_000_000,
    media: [],
    chat_id: "c1",
    thread_id: null,
    ...extra,
  };
}

/** One commit that writes a message and an outbox frame with the same id. */
export function write(id: string): Change {
  return { messages: [message(id)], outbox: [{ type: "message", payload: { id } }] };
}

/** Resolves once `check` holds; throws naming `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Whether process `pid` is running (a zombie has exited; only its parent has not collected it yet). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

/** The processes `pid` started, from /proc. */
export function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number),
  );
}

/** The database processes `pid` started, running or not: their entry is the storage's engine bundle. */
export function databasesOf(pid: number): number[] {
  return childrenOf(pid).filter((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, "utf8").includes("sqljs-engine");
    } catch {
      return false;
    }
  });
}

/** The one running database process `pid` started, other than those `killed`; waits for it to be started. */
export async function databaseOf(pid: number, killed: number[] = []): Promise<number> {
  let found: number[] = [];
  await until(
    () => {
      found = databasesOf(pid).filter((p) => alive(p) && !killed.includes(p));
      return found.length === 1;
    },
    "a database process",
    30_000,
  );
  return found[0]!;
}
