// The example server as a child process, and its CLI, for the tests that run it as a person does.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { exampleServerCommand } from "./fixtures/example-server-bundle.js";

const root = join(import.meta.dirname, "..");

/** A started server: where it listens, what it printed, and how to stop it as SIGTERM does. */
export interface ServerProcess {
  base: string;
  ws: string;
  output: () => string;
  child: ChildProcess;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Runs as the nobody account (uid and gid 65534, no other groups): `prefix` of the functions below. */
export const AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];

/** The command line of `examples/server/main.ts args`, behind `prefix` (such as {@link AS_NOBODY}). */
function commandLine(args: string[], prefix: string[]): [string, string[]] {
  const [command, rest] = exampleServerCommand(args);
  const line = [...prefix, command, ...rest];
  return [line[0]!, line.slice(1)];
}

/** Starts `examples/server/main.ts` on a free port; resolves at its start line. */
export function startServerProcess(
  env: Record<string, string>,
  args: string[] = [],
  prefix: string[] = [],
): Promise<ServerProcess> {
  const child = spawn(...commandLine(args, prefix), {
    cwd: root,
    env: { ...process.env, PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const stop = () => {
    child.kill("SIGTERM");
    return exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no start line: ${out}`));
    }, 20_000);
    child.stdout!.on("data", () => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ base: m[1]!, ws: `${m[1]!.replace("http", "ws")}/ws/gateway`, output: () => out, child, stop });
      }
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

/** Runs `examples/server/main.ts` with `args` to its end (the `user` subcommand, a refused start); killed after 2 minutes, so a start that should have been refused fails instead of hanging. */
export function runServerCli(args: string[], env: Record<string, string>, input?: string, prefix: string[] = []) {
  return spawnSync(...commandLine(args, prefix), {
    cwd: root,
    env: { ...process.env, ...env },
    input,
    encoding: "utf8",
    timeout: 120_000,
  });
}
