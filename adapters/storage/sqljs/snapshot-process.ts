import { fork } from "node:child_process";
import { rm } from "node:fs/promises";
import { setPriority } from "node:os";
import { join } from "node:path";
import { fromWire, type WireError } from "./engine-calls.js";
import { sqlJsExecArgv } from "./exec-argv.js";
import type { Snapshotter } from "./engine.js";
import { snapshotName } from "./snapshot.js";

/** The first argument that starts the database process's entry as a snapshot process instead. */
export const SNAPSHOT_MODE = "snapshot";

/**
 * Only for chat-gateway's own tests: the environment variable that names the snapshot process's
 * test hook (see `snapshot-main.ts`). While it is set, every snapshot but the closing one goes
 * through a snapshot process, however small the database, so that tests can use small ones.
 */
export const TEST_HOOK_ENV = "CHAT_GATEWAY_TEST_SQLJS_SNAPSHOT_HOOK";

/**
 * The snapshot process's nice value: it is background work that can take seconds of CPU at a
 * million messages, and on a small machine it would otherwise take a core from the database
 * process and the process serving sockets, whose calls people wait for.
 */
const SNAPSHOT_NICENESS = 10;

/** Messages from a snapshot process to the database process that started it. */
export type FromSnapshot =
  | { t: "warn"; message: string }
  | { t: "done"; bytes: number }
  | { t: "failed"; error: WireError };

/**
 * Snapshots taken by a short-lived process started from `entry` (the database process's own
 * entry, in {@link SNAPSHOT_MODE}): it loads the folder as a start would, exports and writes the
 * file, so the database process never runs the export that would stall every call for seconds.
 * The snapshot process takes no lock (the serving process holds it) and exits when its parent does.
 */
export function snapshotProcess(entry: string, warn: (message: string) => void): Snapshotter {
  return (dir, gen) => {
    const child = fork(entry, [SNAPSHOT_MODE, dir, String(gen)], {
      execArgv: sqlJsExecArgv(),
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    try {
      if (child.pid !== undefined) setPriority(child.pid, SNAPSHOT_NICENESS);
    } catch {
      // Not allowed here (some containers): it runs at the database process's priority.
    }
    let outcome: FromSnapshot | undefined;
    child.on("message", (message: FromSnapshot) => {
      if (message.t === "warn") warn(message.message);
      else outcome = message;
    });
    // Settled once the process is gone, so there is never more than one.
    const done = new Promise<number>((resolve, reject) => {
      const settle = async (reason: string) => {
        if (outcome?.t === "done") return resolve(outcome.bytes);
        // A process killed mid-write leaves its temporary file behind; one that failed removed its own.
        await rm(join(dir, `${snapshotName(gen)}.tmp`), { force: true }).catch(() => undefined);
        reject(
          outcome?.t === "failed" ? fromWire(outcome.error) : new Error(`the snapshot process stopped (${reason})`),
        );
      };
      child.once("exit", (code, signal) => void settle(signal ?? `exit code ${code}`));
      // A process that could not be started never exits.
      child.once("error", (error) => {
        if (child.pid === undefined) void settle(error.message);
      });
    });
    return {
      done,
      stop: async () => {
        child.kill("SIGKILL");
        await done.catch(() => undefined);
      },
    };
  };
}
