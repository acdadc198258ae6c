/**
 * A lock shared by every process that writes one file (the server, a second server on the same
 * folder, the command line): an exclusive-create lock file beside it (docs/PROTOCOL.md §16).
 * @module
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { hostname } from "node:os";

/** Options of {@link withFileLock}; times in milliseconds. */
export interface FileLockOptions {
  /** A lock file this old is left by a holder that died, and is broken. Default 30,000. */
  staleMs?: number;
  /** Give up waiting after this long (an `Error` naming the lock). Default 60,000: past a stale lock. */
  timeoutMs?: number;
}

/** What a holder writes in its lock file: who it is, so a lock of a dead process here is broken at once. */
function holder(): string {
  return JSON.stringify({ pid: process.pid, host: hostname() });
}

/** Whether the lock file at `lock` (last changed `mtimeMs`) belongs to nobody alive. */
async function isStale(lock: string, mtimeMs: number, staleMs: number): Promise<boolean> {
  if (Date.now() - mtimeMs > staleMs) return true;
  try {
    const { pid, host } = JSON.parse(await fs.readFile(lock, "utf8")) as { pid?: unknown; host?: unknown };
    if (host !== hostname() || typeof pid !== "number") return false;
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // ESRCH: no such process here. A lock half written or gone is not judged stale: wait for it.
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * Breaks the stale lock whose inode is `ino`: moved aside first, so that of two waiters breaking
 * it at once only one removes it, and a fresh lock taken meanwhile by a third is put back.
 */
async function breakLock(lock: string, ino: number): Promise<void> {
  const aside = `${lock}.${randomBytes(6).toString("hex")}.stale`;
  try {
    await fs.rename(lock, aside);
  } catch {
    return; // someone else broke or released it
  }
  if ((await fs.stat(aside)).ino !== ino) await fs.link(aside, lock).catch(() => undefined);
  await fs.rm(aside, { force: true });
}

/** Takes the lock file `lock` (exclusive create), waiting while another holder has it. */
async function acquire(lock: string, staleMs: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 2; ; wait = Math.min(wait * 2, 100)) {
    try {
      await fs.writeFile(lock, holder(), { flag: "wx", mode: 0o600 });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const seen = await fs.stat(lock).catch(() => undefined);
    if (seen !== undefined && (await isStale(lock, seen.mtimeMs, staleMs))) {
      await breakLock(lock, seen.ino);
      continue;
    }
    if (Date.now() >= deadline) throw new Error(`${lock} is held by another process; try again`);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/**
 * Runs `work` while holding the lock file `lock`, then releases it, also when `work` fails. Every
 * process that changes the locked file must go through here: they then change it one at a time.
 * A lock whose holder died (its process gone on this host, or the lock older than `staleMs`) is
 * broken. The folder must exist.
 * @throws the error of `work`, or an `Error` after waiting `timeoutMs` for the lock
 */
export async function withFileLock<T>(lock: string, work: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  await acquire(lock, options.staleMs ?? 30_000, options.timeoutMs ?? 60_000);
  try {
    return await work();
  } finally {
    await fs.rm(lock, { force: true });
  }
}
