import initSqlJs from "sql.js";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { toWire } from "./engine-calls.js";
import { PRIVATE_FILE } from "./file-modes.js";
import { loadFolder } from "./load.js";
import { TEST_HOOK_ENV, type FromSnapshot } from "./snapshot-process.js";
import { snapshotName, writeSnapshot } from "./snapshot.js";

function send(message: FromSnapshot): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, {}, () => resolve());
  });
}

/**
 * Only for chat-gateway's own tests, which must make a snapshot slow or crash to show that the
 * database keeps answering and loses nothing: the environment variable names a JSON file read at
 * each start (none: no hook), `{ "delayMs"?: number, "crash"?: true, "startedFile"?: string,
 * "releaseFile"?: string }`; with `releaseFile` it waits until that file exists, so a test holds the
 * snapshot for exactly as long as it needs, however slow the machine.
 */
async function testHook(dir: string, gen: number): Promise<void> {
  const path = process.env[TEST_HOOK_ENV];
  if (!path) return;
  const text = await readFile(path, "utf8").catch(() => "{}");
  const hook = JSON.parse(text) as { delayMs?: number; crash?: boolean; startedFile?: string; releaseFile?: string };
  if (hook.startedFile) await writeFile(hook.startedFile, `${process.pid} ${gen}\n`, { flag: "a" });
  if (hook.delayMs) await new Promise((r) => setTimeout(r, hook.delayMs));
  while (hook.releaseFile && !existsSync(hook.releaseFile)) await new Promise((r) => setTimeout(r, 20));
  if (hook.crash) {
    // Dies as a killed process would, half way through its temporary file.
    await writeFile(join(dir, `${snapshotName(gen)}.tmp`), "CGSNAP01 partial", { mode: PRIVATE_FILE });
    process.kill(process.pid, "SIGKILL");
  }
}

/**
 * The snapshot process: loads the generations of `dir` before `gen` exactly as a start does
 * (without changing any file), exports the database and writes `snapshot-<gen>`, then exits.
 * The database process keeps answering meanwhile; its journal generation `gen` holds every write
 * since, which the next start replays on top of this snapshot.
 */
export async function serveSnapshot(dir: string, gen: number): Promise<void> {
  // The database process gone means the folder may soon have another owner: stop at once. (A
  // snapshot it finished anyway is still consistent: it holds exactly the generations before `gen`.)
  process.on("disconnect", () => process.exit(0));
  // Terminal signals reach the whole process group; the database process decides when this one stops.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);
  try {
    await testHook(dir, gen);
    const loaded = await loadFolder(dir, await initSqlJs(), (message) => void send({ t: "warn", message }), gen);
    const bytes = loaded.db.export();
    loaded.sql.free();
    loaded.db.close();
    const size = bytes.length;
    await writeSnapshot(dir, gen, bytes);
    await send({ t: "done", bytes: size });
  } catch (error) {
    await send({ t: "failed", error: toWire(error) });
  }
  process.exit(0);
}
