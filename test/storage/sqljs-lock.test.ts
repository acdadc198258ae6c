import { spawn } from "node:child_process";
import { readFile, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { fixtureCommand } from "../fixtures/example-server-bundle.js";
import { DataDirLockedError, sqlJsStorage } from "chat-gateway/storage/sqljs";
import { files, openStorage, removeTempDirs, tempDir, until, write } from "./sqljs-helpers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

afterEach(removeTempDirs);

/** Starts the fixture; resolves with the child once it printed its first line. */
function start(dir: string, mode: "hold" | "try", prefix: string[] = []) {
  const command = [...prefix, ...fixtureCommand("sqljs-lock-holder", [dir, mode]).flat()];
  const child = spawn(command[0], command.slice(1), { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const firstLine = new Promise<string>((resolve) => {
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      if (out.includes("\n")) resolve(out.split("\n")[0]);
    });
    void exited.then(() => resolve(out.split("\n")[0]));
  });
  return { child, firstLine, exited };
}

describe("sql.js lock", () => {
  test("lock - a second process gets a clear error while the first owns the folder", { timeout: 30_000 }, async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    await storage.commit("alice", write("m0"));
    const since = new Date(JSON.parse(await readFile(join(dir, "LOCK"), "utf8")).since as number).toISOString();
    const second = start(dir, "try");
    expect(await second.firstLine).toBe(
      `DataDirLockedError: sql.js storage: data folder ${dir} is in use by process ${process.pid} on ${hostname()} (since ${since}). ` +
        `Stop that process or use another folder; if you are sure it is gone, delete ${join(dir, "LOCK")}.`,
    );
    expect(await second.exited).toBe(1);
    // The refused process touched nothing: the owner keeps working.
    expect((await storage.commit("alice", write("m1"))).seqs).toEqual([2]);
    await storage.close();
    expect(await files(dir)).not.toContain("LOCK");
  });

  test("lock - the folder is refused to another process, then taken over once that process is killed", {
    timeout: 30_000,
  }, async () => {
    const dir = await tempDir();
    const holder = start(dir, "hold");
    expect(await holder.firstLine).toBe("ready");
    const refused = sqlJsStorage({ dir });
    const error = await refused.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DataDirLockedError);
    expect((error as DataDirLockedError).holder.pid).toBe(holder.child.pid);
    expect((error as Error).message).toMatch(new RegExp(`in use by process ${holder.child.pid} `));

    holder.child.kill("SIGKILL");
    await holder.exited;
    expect(JSON.parse(await readFile(join(dir, "LOCK"), "utf8")).pid).toBe(holder.child.pid);
    const { storage } = await openStorage(dir);
    expect(JSON.parse(await readFile(join(dir, "LOCK"), "utf8")).pid).toBe(process.pid);
    await storage.close();
  });

  test("lock - a second storage on the same folder in the same process is refused", async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    await expect(sqlJsStorage({ dir }).open()).rejects.toThrow(DataDirLockedError);
    await storage.close();
    const { storage: next } = await openStorage(dir);
    await next.close();
  });

  test("lock - a stale lock left by a dead process is taken over", async () => {
    const dir = await tempDir();
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((r) => dead.on("exit", r));
    await writeFile(join(dir, "LOCK"), JSON.stringify({ pid: dead.pid, host: hostname(), since: 1 }));
    const { storage } = await openStorage(dir);
    expect((await storage.commit("alice", write("m0"))).seqs).toEqual([1]);
    await storage.close();
  });

  test("lock - a holder that died but is not reaped yet (a zombie) does not hold the folder", {
    timeout: 30_000,
  }, async () => {
    const dir = await tempDir();
    // `exec sleep` becomes the holder's parent and never waits for it: once killed, it stays a zombie.
    const holderCommand = fixtureCommand("sqljs-lock-holder", [dir, "hold"])
      .flat()
      .map((arg) => `"${arg}"`)
      .join(" ");
    const parent = spawn("sh", ["-c", `${holderCommand} & exec sleep 600`], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) =>
      parent.stdout.on("data", (chunk) => String(chunk).includes("ready") && resolve()),
    );
    const holder = JSON.parse(await readFile(join(dir, "LOCK"), "utf8")).pid as number;
    expect(holder).not.toBe(parent.pid);
    process.kill(holder, "SIGKILL");
    const state = async () => (await readFile(`/proc/${holder}/stat`, "utf8")).split(") ")[1]?.[0];
    await until(async () => (await state()) === "Z", "the holder to become a zombie");

    const { storage } = await openStorage(dir);
    expect(JSON.parse(await readFile(join(dir, "LOCK"), "utf8")).pid).toBe(process.pid);
    expect((await storage.commit("alice", write("m0"))).seqs).toEqual([1]);
    // Still a zombie: it was its state, not its absence, that freed the folder.
    expect(await state()).toBe("Z");
    await storage.close();
    parent.kill("SIGKILL");
  });

  test("lock - a lock left by an earlier process with this process's pid (a restarted container) is taken over", async () => {
    const dir = await tempDir();
    const boot = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    // Same pid, same boot, another instance: the process that wrote it is gone, since the pid is ours.
    await writeFile(
      join(dir, "LOCK"),
      JSON.stringify({ pid: process.pid, host: hostname(), since: 1, boot, start: "1", instance: "earlier" }),
    );
    const { storage } = await openStorage(dir);
    expect(JSON.parse(await readFile(join(dir, "LOCK"), "utf8"))).toMatchObject({ pid: process.pid, boot });
    expect((await storage.commit("alice", write("m0"))).seqs).toEqual([1]);
    await storage.close();

    // Same pid written by a version that recorded no instance (the lock of PID 1 before this fix).
    await writeFile(join(dir, "LOCK"), JSON.stringify({ pid: process.pid, host: hostname(), since: 1 }));
    const { storage: again } = await openStorage(dir);
    await again.close();
  });

  test("lock - a lock from before a reboot is taken over even when its pid is alive", async () => {
    const dir = await tempDir();
    const other = start(await tempDir(), "hold");
    expect(await other.firstLine).toBe("ready");
    await writeFile(
      join(dir, "LOCK"),
      JSON.stringify({
        pid: other.child.pid,
        host: hostname(),
        since: 1,
        boot: "another-boot",
        start: "1",
        instance: "x",
      }),
    );
    const { storage } = await openStorage(dir);
    await storage.close();
    other.child.kill("SIGKILL");
    await other.exited;
  });

  test("lock - a live pid reused by a process that started later does not hold the lock", async () => {
    const dir = await tempDir();
    const boot = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    const holder = start(dir, "hold");
    expect(await holder.firstLine).toBe("ready");
    const real = JSON.parse(await readFile(join(dir, "LOCK"), "utf8"));
    expect(real).toMatchObject({ pid: holder.child.pid, boot });
    expect(typeof real.start).toBe("string");
    // The live holder, as recorded, is refused...
    await expect(sqlJsStorage({ dir }).open()).rejects.toThrow(DataDirLockedError);
    // ...but the same pid recorded with another start time is a process that is gone.
    await writeFile(join(dir, "LOCK"), JSON.stringify({ ...real, start: String(Number(real.start) - 1) }));
    const { storage } = await openStorage(dir);
    await storage.close();
    holder.child.kill("SIGKILL");
    await holder.exited;
  });

  test("lock - two processes taking over the same stale lock: exactly one gets the folder", {
    timeout: 30_000,
  }, async () => {
    const dir = await tempDir();
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((r) => dead.on("exit", r));
    await writeFile(join(dir, "LOCK"), JSON.stringify({ pid: dead.pid, host: hostname(), since: 1 }));
    const racers = [start(dir, "hold"), start(dir, "hold"), start(dir, "hold")];
    const lines = await Promise.all(racers.map((r) => r.firstLine));
    expect(lines.filter((l) => l === "ready")).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith("DataDirLockedError:"))).toHaveLength(2);
    for (const r of racers) r.child.kill("SIGKILL");
    await Promise.all(racers.map((r) => r.exited));
  });

  // What a container sees: PID 1 in a PID namespace of its own, a fresh one after each restart.
  const container = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"];

  test("lock - a container restarted after a crash (PID 1 in a fresh PID namespace) gets its folder back; a live one keeps it", {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir();
    const first = start(dir, "hold", container);
    expect(await first.firstLine).toBe("ready");
    const held = JSON.parse(await readFile(join(dir, "LOCK"), "utf8"));
    expect(held.pid).toBe(1);
    // Another container, also PID 1: the holder's pid means nothing there, its heartbeat does.
    const sibling = start(dir, "try", container);
    expect(await sibling.firstLine).toMatch(
      /^DataDirLockedError: sql.js storage: data folder .* is in use by process 1 /,
    );
    expect(await sibling.exited).toBe(1);

    first.child.kill("SIGKILL");
    await first.exited;
    const lastBeat = (await stat(join(dir, "LOCK"))).mtimeMs;
    const restarted = start(dir, "try", container);
    expect(await restarted.firstLine).toBe("opened");
    const openedAt = Date.now();
    expect(await restarted.exited).toBe(0);
    // What a container takes to open a folder nobody holds, on this machine now: the cost of the
    // open itself, measured in the same run so that a slow machine slows both alike.
    const baseline = Date.now();
    const free = start(await tempDir(), "try", container);
    expect(await free.firstLine).toBe("opened");
    const openMs = Date.now() - baseline;
    await free.exited;
    // It waited for the heartbeat to go quiet (HEARTBEAT_STALE_MS, 10 s), not longer: past the
    // open's own cost it waited less than half another such wait more.
    expect(openedAt - lastBeat).toBeGreaterThanOrEqual(10_000);
    expect(openedAt - lastBeat - openMs).toBeLessThan(15_000);
  });

  test("lock - a lock from another PID namespace that nobody touched for a while is taken over at once", async () => {
    const dir = await tempDir();
    const boot = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    await writeFile(
      join(dir, "LOCK"),
      JSON.stringify({ pid: 1, host: hostname(), since: 1, boot, start: "5", instance: "x", ns: "pid:[1]" }),
    );
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, "LOCK"), old, old);
    // Opening a folder nobody holds, on this machine now: the cost of the open itself.
    const baseline = Date.now();
    const { storage: free } = await openStorage(await tempDir());
    const openMs = Date.now() - baseline;
    await free.close();
    const started = Date.now();
    const { storage } = await openStorage(dir);
    // Watching for a sign of life lasts HEARTBEAT_STALE_MS (10 s) at least, and timers never fire
    // early: an open within half of that of an unlocked one's cost took the lock over without watching.
    expect(Date.now() - started - openMs).toBeLessThan(5_000);
    await storage.close();
  });

  test("lock - another host name on this machine (a recreated container) is judged by its heartbeat; another machine's lock is honoured", {
    timeout: 30_000,
  }, async () => {
    const dir = await tempDir();
    const path = join(dir, "LOCK");
    const boot = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    const old = new Date(Date.now() - 60_000);
    await writeFile(
      path,
      JSON.stringify({
        pid: 1,
        host: "elsewhere",
        since: 1,
        boot: "another-machine",
        start: "5",
        instance: "x",
        ns: "pid:[1]",
      }),
    );
    await utimes(path, old, old);
    await expect(sqlJsStorage({ dir }).open()).rejects.toThrow(/in use by process 1 on elsewhere/);

    // Same kernel, another name: alive while the file is touched...
    await writeFile(
      path,
      JSON.stringify({ pid: 1, host: "c0ffee", since: 1, boot, start: "5", instance: "x", ns: "pid:[1]" }),
    );
    const beat = setInterval(() => void utimes(path, new Date(), new Date()).catch(() => undefined), 300);
    await expect(sqlJsStorage({ dir, onWarning: () => {} }).open()).rejects.toThrow(/in use by process 1 on c0ffee/);
    clearInterval(beat);
    // ...gone once it has not been for a while.
    await utimes(path, old, old);
    const { storage } = await openStorage(dir);
    expect(JSON.parse(await readFile(path, "utf8")).host).toBe(hostname());
    await storage.close();
  });
});
