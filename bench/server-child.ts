/**
 * A bench's server in a child process of its own (so its event loop, memory and CPU time are its
 * own), spoken to over IPC: every message sent is answered by the next one the child sends. The
 * child first sends `{ kind: "ready", port }`, and leaves on `{ kind: "exit" }`.
 * `BENCH_SERVER_ARGS` adds Node flags to the children only (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
 * @module
 */
import { fork, type ChildProcess } from "node:child_process";

type Exit = { kind: "exit" };
type Ready = { kind: "ready"; port: number };

export class ServerChild<To extends { kind: string }, From extends { kind: string }> {
  readonly #child: ChildProcess;
  readonly #waiting: Array<{ resolve: (m: From | Ready) => void; reject: (e: Error) => void }> = [];
  /** The port the child listens on, once it said so. */
  readonly ready: Promise<number>;

  /** Forks `file` (a bench module run by tsx, as this process is) with `args` and extra Node `flags`. */
  constructor(file: string, args: string[], name: string, flags: string[] = []) {
    const extra = (process.env.BENCH_SERVER_ARGS ?? "").split(" ").filter(Boolean);
    this.#child = fork(file, args, {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      execArgv: [...process.execArgv, ...flags, ...extra],
    });
    this.#child.on("message", (m: From | Ready) => this.#waiting.shift()?.resolve(m));
    this.#child.on("exit", (code) => {
      for (const w of this.#waiting.splice(0)) w.reject(new Error(`${name} exited with ${code}`));
    });
    this.ready = this.#next(30_000).then((m) => {
      if (m.kind !== "ready") throw new Error(`${name}: expected ready, got ${m.kind}`);
      return (m as Ready).port;
    });
  }

  #next(timeoutMs: number): Promise<From | Ready> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("server child did not answer")), timeoutMs);
      this.#waiting.push({
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  /** Sends `m` and resolves with the child's answer (at most `timeoutMs` later). */
  async request(m: To, timeoutMs = 30_000): Promise<From> {
    const answer = this.#next(timeoutMs);
    this.#child.send(m);
    return (await answer) as From;
  }

  /** Asks the child to leave, and kills it when it has not within five seconds. */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once("exit", resolve));
    this.#child.send({ kind: "exit" } satisfies Exit);
    const timer = setTimeout(() => this.#child.kill(), 5000);
    await exited;
    clearTimeout(timer);
  }
}
