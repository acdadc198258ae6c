// The database process of the sql.js storage, seen from outside: it lives and dies with the
// process that opened the storage; its death fails the calls in flight with a clear error rather
// than a hang, and it is started again, or given up on with onFatal; and the folder it writes is
// the same one the in-process mode reads.
import initSqlJs from "sql.js";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { fixtureCommand } from "../fixtures/example-server-bundle.js";
import type { StoredMessage } from "chat-gateway";
import type { Change } from "chat-gateway/storage";
import { GatewayError } from "chat-gateway/protocol";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import {
  alive,
  databaseOf,
  databasesOf,
  message,
  openStorage,
  removeTempDirs,
  tempDir,
  until as untilHolds,
  write,
} from "./sqljs-helpers.js";

afterEach(removeTempDirs);

const root = fileURLToPath(new URL("../..", import.meta.url));

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

describe("sql.js database process", () => {
  test("process - the database process exits when the process that opened the storage is killed", {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir();
    const writer = spawn(...fixtureCommand("sqljs-crash-writer", [dir, "0"]), {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) =>
      writer.stdout.on("data", (chunk) => String(chunk).includes("ack") && resolve()),
    );
    const [database] = databasesOf(writer.pid!);
    expect(database).toBeGreaterThan(0);
    writer.kill("SIGKILL");
    // Gone, so nothing writes to the folder once another process takes it over.
    expect(await until(() => !alive(database), 10_000)).toBe(true);
    const { storage } = await openStorage(dir);
    expect((await storage.outboxBounds("crash")).last).toBeGreaterThan(0);
    await storage.close();
  });

  test("process - a killed database process is started again on the same folder: calls in flight fail clearly, later calls succeed, nothing acknowledged is lost", {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir();
    const { storage, warnings } = await openStorage(dir);
    for (let i = 1; i <= 20; i++) await storage.commit("alice", write(`m${i}`));
    const first = await databaseOf(process.pid, []);
    // Issued, then the process killed before it could answer any of them.
    const inFlight = [
      storage.commit("alice", write("lost-1")),
      storage.getMessage("alice", "m1"),
      storage.commit("alice", write("lost-2")),
    ];
    process.kill(first, "SIGKILL");
    for (const result of await Promise.allSettled(inFlight)) {
      expect(result.status).toBe("rejected");
      const error = (result as PromiseRejectedResult).reason as GatewayError;
      expect(error).toBeInstanceOf(GatewayError);
      expect(error.code).toBe("internal");
      expect(error.message).toBe(
        "the server's database stopped while this request was in flight, so it may not have been done; send it again",
      );
    }
    // Later calls wait for the new process, which holds every acknowledged write.
    expect((await storage.commit("alice", write("m21"))).seqs).toEqual([21]);
    expect((await storage.getMessage("alice", "m20"))?.text).toBe(message("m20").text);
    expect((await storage.readOutbox("alice", 0, 100)).map((e) => e.payload.id)).toEqual(
      Array.from({ length: 21 }, (_, i) => `m${i + 1}`),
    );
    const second = await databaseOf(process.pid, [first]);
    expect(second).not.toBe(first);
    expect(warnings).toContain(
      "sql.js storage: the database process stopped (SIGKILL); starting it again on the same folder (restart 1 of at most 3 within 60 s)",
    );
    await storage.close();
    expect(alive(second)).toBe(false);

    const again = await openStorage(dir);
    expect((await again.storage.outboxBounds("alice")).last).toBe(21);
    await again.storage.close();
  });

  test("process - a database process that keeps dying is given up on: onFatal is called once, every call fails, close still releases the folder", {
    timeout: 120_000,
  }, async () => {
    const dir = await tempDir();
    const fatal: Error[] = [];
    const { storage, warnings } = await openStorage(dir, { onFatal: (error) => fatal.push(error) });
    await storage.commit("alice", write("m1"));
    const killed: number[] = [];
    // The first death and 3 restarts within a minute: the fourth death is one too many.
    for (let round = 0; round < 4; round++) {
      const pid = await databaseOf(process.pid, killed);
      killed.push(pid);
      process.kill(pid, "SIGKILL");
      if (round === 3) break;
      await untilHolds(() => warnings.filter((w) => w.includes("starting it again")).length > round, "a restart");
      await storage.commit("alice", write(`r${round}`));
    }
    await untilHolds(() => fatal.length > 0, "onFatal");
    expect(fatal.map((e) => e.message)).toEqual([
      "sql.js storage: the database process stopped (SIGKILL) after 3 restarts within 60 s; not starting it again",
    ]);
    const refused = await storage.getMessage("alice", "m1").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({
      code: "internal",
      message: "the server's database stopped and could not be restarted; the server must be restarted",
    });
    expect(databasesOf(process.pid).filter(alive)).toEqual([]);
    await storage.close();
    expect(fatal).toHaveLength(1);

    const again = await openStorage(dir);
    expect((await again.storage.readOutbox("alice", 0, 10)).map((e) => e.payload.id)).toEqual(["m1", "r0", "r1", "r2"]);
    await again.storage.close();
  });

  test("process - a database process that cannot be started again on its folder is given up on after 3 attempts", {
    timeout: 120_000,
  }, async () => {
    const dir = await tempDir();
    const fatal: Error[] = [];
    const { storage, warnings } = await openStorage(dir, { onFatal: (error) => fatal.push(error) });
    await storage.commit("alice", write("m1"));
    // A damaged newest snapshot and no intact one: no start can load the folder any more.
    await writeFile(join(dir, "snapshot-00000099.db"), "not a snapshot");
    process.kill(await databaseOf(process.pid), "SIGKILL");
    await untilHolds(() => fatal.length > 0, "onFatal");
    expect(warnings.filter((w) => w.includes("starting it again"))).toHaveLength(3);
    expect(fatal[0]!.message).toMatch(
      /^sql\.js storage: the database process could not be started again \(no intact snapshot in .*\) after 3 restarts within 60 s; not starting it again$/,
    );
    await expect(storage.getMessage("alice", "m1")).rejects.toMatchObject({
      code: "internal",
      message: "the server's database stopped and could not be restarted; the server must be restarted",
    });
    await storage.close();
  });

  test("process - without onFatal, a database process that cannot be kept running ends the process with exit code 1", {
    timeout: 120_000,
  }, async () => {
    const dir = await tempDir();
    const holder = spawn(...fixtureCommand("sqljs-lock-holder", [dir, "hold"]), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    holder.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => holder.once("exit", (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      holder.stdout.on("data", (chunk) => String(chunk).includes("ready") && resolve()),
    );
    const killed: number[] = [];
    for (let round = 1; round <= 4; round++) {
      const pid = await databaseOf(holder.pid!, killed);
      killed.push(pid);
      process.kill(pid, "SIGKILL");
      if (round < 4)
        await untilHolds(() => stderr.includes(`(restart ${round} of at most 3 within 60 s)`), `restart ${round}`);
    }
    expect(await exited).toBe(1);
    expect(stderr).toMatch(
      /Error: sql\.js storage: the database process .* after 3 restarts within 60 s; not starting it again/,
    );
  });

  test("process - calls made together cross to the database process together, and one that cannot be copied there fails alone", {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    // Same tick: one message to the database process. A function cannot cross a process boundary.
    const uncopyable = {
      ...write("bad"),
      outbox: [{ type: "message", payload: { id: "bad", f: () => 1 } }],
    } as unknown as Change;
    const results = await Promise.allSettled([
      storage.commit("alice", write("m1")),
      storage.commit("alice", uncopyable),
      storage.commit("alice", write("m2")),
      storage.getMessage("alice", "m1"),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/could not be cloned/);
    expect((results[3] as PromiseFulfilledResult<StoredMessage | undefined>).value?.text).toBe(message("m1").text);
    expect((await storage.readOutbox("alice", 0, 10)).map((e) => e.payload.id)).toEqual(["m1", "m2"]);
    await storage.close();
  });

  test("process - replies find their own calls while request ids are handed out again: waves of reads and writes in flight at once, one that fails among them", {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir();
    const { storage } = await openStorage(dir);
    const device = (i: number) => ({
      device_id: `d${i}`,
      device_name: `phone ${i}`,
      caps: { min_protocol: 1, media: true, push: "none" as const, streaming: true, pickers: false, delta: false },
      last_seen: i,
    });
    await Promise.all(Array.from({ length: 40 }, (_, i) => storage.putDevice("alice", device(i))));
    const uncopyable = { ...write("bad"), outbox: [{ type: "message", payload: { f: () => 1 } }] } as unknown as Change;
    for (let wave = 0; wave < 5; wave++) {
      // Each wave's ids are the ones the wave before freed; writes and reads are answered out of order.
      const reads = Array.from({ length: 40 }, (_, i) => storage.getDevice!("alice", `d${(i * 7 + wave) % 40}`));
      const writes = [storage.commit("alice", write(`m${wave}`)), storage.commit("alice", uncopyable)];
      const missing = storage.getDevice!("alice", "nobody");
      const [found, written, none] = await Promise.all([Promise.all(reads), Promise.allSettled(writes), missing]);
      expect(found.map((d) => d?.device_name)).toEqual(
        Array.from({ length: 40 }, (_, i) => `phone ${(i * 7 + wave) % 40}`),
      );
      expect(written.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
      expect(none).toBeUndefined();
    }
    expect((await storage.readOutbox("alice", 0, 10)).map((e) => e.payload.id)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    await storage.close();
  });

  test("process - the database process takes its Node flags from CHAT_GATEWAY_SQLJS_EXEC_ARGV, never the opener's", {
    timeout: 60_000,
  }, async () => {
    const flagsOf = (pid: number) =>
      readFileSync(`/proc/${pid}/cmdline`, "utf8")
        .split("\0")
        .filter((arg) => arg.startsWith("--"));
    const saved = process.env.CHAT_GATEWAY_SQLJS_EXEC_ARGV;
    try {
      process.env.CHAT_GATEWAY_SQLJS_EXEC_ARGV = " --liftoff-only \t --max-old-space-size=300\n";
      const flagged = await openStorage(await tempDir());
      const [database] = databasesOf(process.pid).filter(alive);
      expect(flagsOf(database!)).toEqual(["--liftoff-only", "--max-old-space-size=300"]);
      await flagged.storage.close();

      delete process.env.CHAT_GATEWAY_SQLJS_EXEC_ARGV;
      const plain = await openStorage(await tempDir());
      const [other] = databasesOf(process.pid).filter(alive);
      // This process runs with flags of its own (vitest's): none of them reaches the database process.
      expect(process.execArgv.length).toBeGreaterThan(0);
      expect(flagsOf(other!)).toEqual([]);
      await plain.storage.close();
    } finally {
      if (saved === undefined) delete process.env.CHAT_GATEWAY_SQLJS_EXEC_ARGV;
      else process.env.CHAT_GATEWAY_SQLJS_EXEC_ARGV = saved;
    }
  });

  test("process - inProcess, or a given sqlJs module, runs on the calling thread, over the same folder format", {
    timeout: 60_000,
  }, async () => {
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
