import { GatewayError } from "chat-gateway/protocol";
import type { EngineCall, EngineLink } from "./engine-calls.js";

/** How many restarts of the database process are allowed within how long before the storage gives up. */
export interface RestartBudget {
  /** Restarts (each attempt counts, a failed one too) within {@link windowMs}. */
  max: number;
  windowMs: number;
}

/** Three restarts a minute: enough for a rare death (the OOM killer, a stray kill), not a crash loop. */
export const DEFAULT_RESTARTS: RestartBudget = { max: 3, windowMs: 60_000 };

/**
 * Starts a database process. Should it die once started, `onStop` is called at once, with a
 * promise of how it ended that resolves once it is gone.
 */
export type StartEngine = (onStop: (gone: Promise<string>) => void) => Promise<EngineLink>;

/**
 * The database process, kept running: when it dies, the calls it had in flight fail (with the
 * error of `engine-process.ts`), a new process is started on the same folder, which loads the
 * snapshot and the journal and so holds every acknowledged write, and calls made meanwhile wait
 * for it. More than {@link RestartBudget} restarts in its window, or none that succeeds, and the
 * storage is down for good: every call fails, and `fatal` tells the storage's owner, whose
 * process should then exit so that its process manager starts it afresh (docs/PROTOCOL.md §10.2).
 */
export class SupervisedEngine implements EngineLink {
  readonly #start: StartEngine;
  readonly #warn: (message: string) => void;
  readonly #fatal: (error: Error) => void;
  readonly #budget: RestartBudget;
  #link: EngineLink | undefined;
  /** Set from a death until a new process answers, or the storage gives up. */
  #restarting: Promise<EngineLink> | undefined;
  /** Set once the storage gave up: what every call fails with. */
  #down: GatewayError | undefined;
  /** When each restart within the current window began. */
  #restarts: number[] = [];
  #closed = false;

  private constructor(
    start: StartEngine,
    warn: (message: string) => void,
    fatal: (error: Error) => void,
    budget: RestartBudget,
  ) {
    this.#start = start;
    this.#warn = warn;
    this.#fatal = fatal;
    this.#budget = budget;
  }

  /** Starts the first process; rejects as it does (no restart before the storage ever answered). */
  static async start(
    start: StartEngine,
    warn: (message: string) => void,
    fatal: (error: Error) => void,
    budget = DEFAULT_RESTARTS,
  ): Promise<SupervisedEngine> {
    const supervisor = new SupervisedEngine(start, warn, fatal, budget);
    supervisor.#link = await supervisor.#open();
    return supervisor;
  }

  /** Starts a process whose death, while it is the one in use, starts the next. */
  async #open(): Promise<EngineLink> {
    let link: EngineLink | undefined;
    link = await this.#start((gone) => {
      if (link !== undefined && this.#link === link) this.#stopped(gone);
    });
    return link;
  }

  #stopped(gone: Promise<string>): void {
    this.#link = undefined;
    if (this.#closed) return;
    const restarting = this.#restart(gone);
    this.#restarting = restarting;
    restarting.then(
      (link) => {
        this.#link = link;
        this.#restarting = undefined;
      },
      (error: Error) => {
        this.#restarting = undefined;
        if (this.#closed) return;
        this.#down = new GatewayError(
          "internal",
          "the server's database stopped and could not be restarted; the server must be restarted",
          { cause: error },
        );
        this.#fatal(error);
      },
    );
  }

  /** Starts processes until one answers or the budget is spent; rejects with why it gave up. */
  async #restart(gone: Promise<string>): Promise<EngineLink> {
    const { max, windowMs } = this.#budget;
    // Never two database processes on one folder: the dead one must have exited first.
    let what = `stopped (${await gone})`;
    for (;;) {
      const now = Date.now();
      this.#restarts = this.#restarts.filter((at) => now - at < windowMs);
      if (this.#closed) throw new Error("sql.js storage: the storage is closed");
      if (this.#restarts.length >= max) {
        throw new Error(
          `sql.js storage: the database process ${what} after ${max} restarts within ${windowMs / 1000} s; not starting it again`,
        );
      }
      this.#restarts.push(now);
      this.#warn(
        `sql.js storage: the database process ${what}; starting it again on the same folder (restart ${this.#restarts.length} of at most ${max} within ${windowMs / 1000} s)`,
      );
      try {
        // Should close() have begun meanwhile, it closes this one.
        return await this.#open();
      } catch (error) {
        what = `could not be started again (${((error as Error)?.message ?? String(error)).replace(/^sql\.js storage: /, "")})`;
      }
    }
  }

  call(call: EngineCall): Promise<unknown> {
    if (this.#down) return Promise.reject(this.#down);
    if (this.#link) return this.#link.call(call);
    if (this.#restarting)
      return this.#restarting.then(
        (link) => link.call(call),
        () => Promise.reject(this.#down ?? new Error("sql.js storage: the storage is closed")),
      );
    return Promise.reject(new Error("sql.js storage: the storage is closed"));
  }

  /** Closes the process in use, after the restart in progress if any (never starting another). */
  async close(): Promise<void> {
    this.#closed = true;
    const link = this.#link ?? (await this.#restarting?.catch(() => undefined));
    this.#link = undefined;
    await link?.close();
  }
}
