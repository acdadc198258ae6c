import { randomBytes } from "node:crypto";
import { link, readFile, readlink, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { PRIVATE_FILE } from "./file-modes.js";

/** The lock file's name inside a data folder. */
export const LOCK_FILE = "LOCK";
/** Held for the few milliseconds of a takeover, so two processes never both replace a stale lock. */
const TAKEOVER_FILE = "LOCK.takeover";
/** A takeover marker older than this was left by a process that died in the middle of one. */
const TAKEOVER_STALE_MS = 10_000;
/** How often the holder touches its LOCK file, ms, to show that it is alive. */
const HEARTBEAT_MS = 2_000;
/**
 * A lock from another PID namespace (another container on this machine, or this container before
 * it was restarted) whose file has not been touched for this long, ms, is stale: its pid cannot be
 * checked from here, so the heartbeat is the only sign of life.
 */
const HEARTBEAT_STALE_MS = 10_000;

/**
 * Who holds a data folder: the process id and host written into its LOCK file, and what tells
 * this process apart from an earlier one that had the same id (a container restarted in its own
 * PID namespace runs as PID 1 again, and PIDs are reused).
 */
export interface Holder {
  pid: number;
  host: string;
  since: number;
  /** The kernel's boot id (Linux `/proc/sys/kernel/random/boot_id`); absent elsewhere. */
  boot?: string;
  /** The process start time in clock ticks since boot (Linux `/proc/<pid>/stat`); absent elsewhere. */
  start?: string;
  /** Random, drawn once per process: the same pid with another instance is another process. */
  instance?: string;
  /** The PID namespace (Linux `/proc/self/ns/pid`): a pid means something only within its own. */
  ns?: string;
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

/** Shared by every copy of this module in the process (ESM and CommonJS builds alike). */
const INSTANCE: string = processInstance();

function processInstance(): string {
  const shared = globalThis as Record<symbol, string | undefined>;
  const key = Symbol.for("chat-gateway.sqljs.instance");
  shared[key] ??= randomBytes(12).toString("hex");
  return shared[key];
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, "utf8")).trim();
  } catch {
    return undefined;
  }
}

/** The fields of /proc/<pid>/stat after the command name, which may hold spaces and parentheses. */
async function statFields(pid: number): Promise<string[] | undefined> {
  const stat = await readText(`/proc/${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Field 22 of /proc/<pid>/stat. */
async function startTimeOf(pid: number): Promise<string | undefined> {
  return (await statFields(pid))?.[19];
}

/**
 * Whether `pid` is still running. A zombie (state Z, or X while it is being reaped) has exited and
 * only waits for its parent to collect it, yet `kill(pid, 0)` still succeeds on it: a server that
 * crashed and is restarted before its parent reaped it must not find its own corpse in the way.
 */
async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const state = (await statFields(pid))?.[0];
  return state !== "Z" && state !== "X";
}

async function readHolder(path: string): Promise<Holder | undefined> {
  try {
    const h = JSON.parse(await readFile(path, "utf8")) as Holder;
    return typeof h.pid === "number" && typeof h.host === "string" ? h : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the process that wrote `holder` is certainly gone, seen from the process `me`. */
async function isStale(path: string, holder: Holder, me: Holder, warn: (message: string) => void): Promise<boolean> {
  // Another host name on the kernel we run on is a container of this machine (recreated with a
  // new name, say); on another machine nothing can be checked, so the lock is honoured.
  const sameKernel = holder.boot !== undefined && holder.boot === me.boot;
  if (holder.host !== me.host && !sameKernel) return false;
  // The machine rebooted since the lock was written.
  if (holder.boot && me.boot && holder.boot !== me.boot) return true;
  if (holder.host !== me.host || (holder.ns && me.ns && holder.ns !== me.ns)) {
    warn(
      `sql.js storage: ${path} was written by process ${holder.pid} on ${holder.host} in another PID namespace (a container before its restart?); waiting up to ${HEARTBEAT_STALE_MS / 1000} s for a sign of life`,
    );
    return heartbeatStopped(path);
  }
  // Our own pid: either this very process (a second storage on the folder), or an earlier
  // process that had our pid, which must be gone since the pid is ours now (a lock without an
  // instance was written by an earlier version, so never by this process).
  if (holder.pid === me.pid) return holder.instance !== me.instance;
  if (!(await isAlive(holder.pid))) return true;
  // Alive, but a process started at another time has taken over the recycled pid.
  const start = holder.start ? await startTimeOf(holder.pid) : undefined;
  return start !== undefined && start !== holder.start;
}

/**
 * Watches the LOCK file's modification time: true once it is older than {@link HEARTBEAT_STALE_MS}
 * (waiting for that if need be), false as soon as it changes, since its holder is then alive.
 */
async function heartbeatStopped(path: string): Promise<boolean> {
  const mtimeOf = () =>
    stat(path).then(
      (s) => s.mtimeMs,
      () => undefined,
    );
  const seen = await mtimeOf();
  for (;;) {
    if (seen === undefined) return true;
    const age = Date.now() - seen;
    if (age > HEARTBEAT_STALE_MS) return true;
    await new Promise((r) => setTimeout(r, Math.min(250, HEARTBEAT_STALE_MS - age + 1)));
    if ((await mtimeOf()) !== seen) return false;
  }
}

/** Touches the LOCK file now and then, so a process in another PID namespace can tell we are alive. */
function heartbeat(path: string): () => void {
  const timer = setInterval(() => {
    const now = new Date();
    utimes(path, now, now).catch(() => undefined);
  }, HEARTBEAT_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Runs `fn` while holding the takeover marker; resolves false when another process holds it. */
async function withTakeover(dir: string, tmp: string, fn: () => Promise<void>): Promise<boolean> {
  const marker = join(dir, TAKEOVER_FILE);
  try {
    await link(tmp, marker);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const age = await stat(marker).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (age > TAKEOVER_STALE_MS) await rm(marker, { force: true });
    return false;
  }
  try {
    await fn();
  } finally {
    await rm(marker, { force: true });
  }
  return true;
}

/**
 * Makes this process the one owner of `dir`, taking over a lock whose process is dead: gone (or a
 * zombie its parent has not reaped yet), on a machine that has rebooted since, an earlier process
 * with this process's pid, or (when written from another PID namespace or under another host name
 * on this machine, such as a container before its restart or recreation) a holder that stopped
 * touching the file for {@link HEARTBEAT_STALE_MS}; open() then waits up to that long. A lock from another machine is
 * always honoured. The lock is created by hard-linking a complete temporary file, so
 * nobody ever reads a half-written lock, and a stale lock is replaced under a takeover marker, so
 * two processes that both find it stale cannot both end up owning the folder.
 * Resolves with the function that releases it.
 */
export async function acquireLock(
  dir: string,
  warn: (message: string) => void = () => {},
): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  const me: Holder = {
    pid: process.pid,
    host: hostname(),
    since: Date.now(),
    boot: await readText("/proc/sys/kernel/random/boot_id"),
    start: await startTimeOf(process.pid),
    instance: INSTANCE,
    ns: await readlink("/proc/self/ns/pid").catch(() => undefined),
  };
  const tmp = join(dir, `${LOCK_FILE}.${process.pid}.${randomBytes(6).toString("hex")}`);
  await writeFile(tmp, JSON.stringify(me), { flush: true, mode: PRIVATE_FILE });
  let stopHeartbeat = () => {};
  const release = async () => {
    stopHeartbeat();
    const h = await readHolder(path);
    if (h?.pid === me.pid && h.since === me.since && h.instance === me.instance) await rm(path, { force: true });
  };
  try {
    for (const deadline = Date.now() + TAKEOVER_STALE_MS + 5_000; Date.now() < deadline; ) {
      try {
        await link(tmp, path);
        stopHeartbeat = heartbeat(path);
        return release;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await readHolder(path);
      // An unreadable lock can only come from damage, since locks are created whole.
      if (holder && !(await isStale(path, holder, me, warn))) throw new DataDirLockedError(dir, holder);
      const replaced = await withTakeover(dir, tmp, async () => {
        // Checked again under the marker: another process may have replaced it meanwhile.
        const now = await readHolder(path);
        if (JSON.stringify(now) === JSON.stringify(holder)) await rm(path, { force: true });
      });
      if (!replaced) await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`sql.js storage: could not take the lock of ${dir}: it keeps changing hands`);
  } finally {
    await rm(tmp, { force: true });
  }
}
