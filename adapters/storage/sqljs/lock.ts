import { link, readFile, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";

/** The lock file's name inside a data folder. */
export const LOCK_FILE = "LOCK";

/** Who holds a data folder: the process id and host written into its LOCK file. */
export interface Holder {
  pid: number;
  host: string;
  since: number;
}

/** Thrown by `open()` when another live process owns the data folder. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: Holder,
  ) {
    super(
      `sql.js storage: data folder ${dir} is in use by process ${holder.pid} on ${holder.host} ` +
        `(since ${new Date(holder.since).toISOString()}). Stop that process or use another folder; ` +
        `if you are sure it is gone, delete ${join(dir, LOCK_FILE)}.`,
    );
    this.name = "DataDirLockedError";
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readHolder(path: string): Promise<Holder | undefined> {
  try {
    const h = JSON.parse(await readFile(path, "utf8")) as Holder;
    return typeof h.pid === "number" && typeof h.host === "string" ? h : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes this process the one owner of `dir`, taking over a lock whose process is dead. The lock is
 * created by hard-linking a complete temporary file, so nobody ever reads a half-written lock.
 * Resolves with the function that releases it.
 */
export async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  const me: Holder = { pid: process.pid, host: hostname(), since: Date.now() };
  const tmp = join(dir, `${LOCK_FILE}.${process.pid}.${Math.random().toString(36).slice(2)}`);
  await writeFile(tmp, JSON.stringify(me), { flush: true });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(tmp, path);
        return async () => {
          const h = await readHolder(path);
          if (h?.pid === me.pid && h.since === me.since) await rm(path, { force: true });
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await readHolder(path);
      // A lock from another host cannot be checked, so it is honoured; an unreadable one can only
      // come from damage, since locks are created whole.
      if (holder && (holder.host !== me.host || (holder.pid === me.pid ? true : isAlive(holder.pid)))) {
        throw new DataDirLockedError(dir, holder);
      }
      await rm(path, { force: true });
    }
    throw new Error(`sql.js storage: could not take the lock of ${dir}: it keeps changing hands`);
  } finally {
    await rm(tmp, { force: true });
  }
}
