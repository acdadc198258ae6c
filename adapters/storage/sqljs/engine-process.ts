import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { GatewayError } from "chat-gateway/protocol";
import { ChannelBatch } from "./channel-batch.js";
import { fromWire, type EngineCall, type EngineLink, type FromEngine, type ToEngine } from "./engine-calls.js";
import type { EngineSettings } from "./engine.js";
import { PendingCall, PendingCalls } from "./pending-calls.js";
import { sqlJsExecArgv } from "./exec-argv.js";

/** The CommonJS build has an empty `import.meta`; its `__filename` (the bundle) is in the same folder. */
const HERE = typeof import.meta.url === "string" ? import.meta.url : pathToFileURL(__filename).href;

/**
 * The database process's entry: from the build, the plain module beside this bundle; from the
 * TypeScript sources, a bundle of them made on first use (see `engine-source.mjs`).
 */
async function entry(): Promise<string> {
  if (!HERE.endsWith(".ts")) return fileURLToPath(new URL("./sqljs-engine.js", HERE));
  // A specifier the bundler leaves alone: the build never includes the sources' bundler.
  const source = new URL("./engine-source.mjs", HERE).href;
  const { engineBundle } = (await import(source)) as { engineBundle: () => Promise<string> };
  return engineBundle();
}

/** A message to the database process before it is given its id. */
type Request = ToEngine extends infer T ? (T extends ToEngine ? Omit<T, "id"> : never) : never;

/**
 * What a call in flight when the database process died rejects with: it may or may not have been
 * done (a write journaled just before the death is kept), and the client may send it again
 * (docs/PROTOCOL.md §8.1). The technical reason is the cause, for the log.
 */
function stoppedInFlight(reason: Error): GatewayError {
  return new GatewayError(
    "internal",
    "the server's database stopped while this request was in flight, so it may not have been done; send it again",
    { cause: reason },
  );
}

/**
 * The storage's side of the database process: requests out, replies in, matched by id. The
 * channel keeps the serving process alive only while a reply is awaited, so a storage nobody
 * closed does not hold the process open. Should the database process die (or its channel break,
 * whereupon it is killed), every pending and later call fails with {@link stoppedInFlight}, and
 * `onStop` is told at once, with a promise of how the process ended that resolves once it is gone
 * for certain; what was acknowledged is on disk.
 */
class ProcessLink implements EngineLink {
  readonly #child: ChildProcess;
  readonly #pending = new PendingCalls();
  /** Resolves once the process is gone, with how it ended. */
  readonly #exited: Promise<string>;
  /** Requests leave once per turn of the event loop, as one message (see {@link ChannelBatch}). */
  readonly #out: ChannelBatch<ToEngine>;
  /** What the calls fail with once the process is gone. */
  #gone: Error | undefined;
  /** close() has begun: the channel closing and the process exiting are expected. */
  #closing = false;

  constructor(file: string, warn: (message: string) => void, onStop: (gone: Promise<string>) => void) {
    this.#child = fork(file, [], {
      execArgv: sqlJsExecArgv(),
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.#out = new ChannelBatch((messages, done) => this.#child.send(messages, done));
    this.#child.on("message", (messages: FromEngine[]) => {
      for (const message of messages) {
        if (message.t === "warn") {
          warn(message.message);
          continue;
        }
        const pending = this.#pending.take(message.id);
        if (message.error) pending?.reject(fromWire(message.error));
        else pending?.resolve(message.value);
      }
      this.#idle();
    });
    let exited!: (why: string) => void;
    this.#exited = new Promise((resolve) => (exited = resolve));
    const lost = (why: string) => {
      const first = this.#gone === undefined;
      this.#lost(new Error(`sql.js storage: the database process stopped (${why})`));
      if (first && !this.#closing) onStop(this.#exited);
    };
    // A channel that breaks under a live process leaves it unreachable: it is stopped for good.
    this.#child.once("disconnect", () => {
      if (this.#closing) return;
      lost("its channel closed");
      this.#child.kill("SIGKILL");
    });
    this.#child.once("exit", (code, signal) => {
      lost(signal ?? `exit code ${code}`);
      exited(signal ?? `exit code ${code}`);
    });
    this.#child.once("error", (error) => {
      lost(error.message);
      // A process that could not be started never exits: close() must not wait for it.
      if (this.#child.pid === undefined) exited(error.message);
      else this.#child.kill("SIGKILL");
    });
  }

  /** Fails every call in flight, and every later one, with the reason the process is gone. */
  #lost(reason: Error): void {
    this.#gone ??= stoppedInFlight(reason);
    for (const p of this.#pending.takeAll()) p.reject(this.#gone);
  }

  /** Lets the serving process exit when nothing is awaited. */
  #idle(): void {
    if (this.#pending.size === 0) {
      this.#child.unref();
      this.#child.channel?.unref();
    }
  }

  request(message: Request): Promise<unknown> {
    if (this.#gone) return Promise.reject(this.#gone);
    this.#child.ref();
    this.#child.channel?.ref();
    return new Promise((resolve, reject) => {
      const pending = new PendingCall(resolve, reject);
      const id = this.#pending.add(pending);
      this.#out.push({ ...message, id } as ToEngine, (error) => {
        if (!this.#pending.remove(id, pending)) return;
        // A closed channel means a dead process, whose exit has not been seen yet.
        reject(this.#gone ?? (this.#child.connected ? error : stoppedInFlight(error)));
        this.#idle();
      });
    });
  }

  call(call: EngineCall): Promise<unknown> {
    return this.request({ t: "call", call });
  }

  async close(): Promise<void> {
    this.#closing = true;
    try {
      if (!this.#gone) await this.request({ t: "close" });
    } finally {
      // Kept alive until the database process is gone, so the lock is released after it.
      this.#child.ref();
      if (this.#child.connected) this.#child.disconnect();
      await this.#exited;
    }
  }
}

/**
 * Starts the database process and loads the folder in it; rejects with the reason it could not.
 * Once started, `onStop` is called should the process die: at once, with a promise of how it
 * ended that resolves once it is gone (see {@link ProcessLink}).
 */
export async function startEngineProcess(
  settings: EngineSettings,
  warn: (message: string) => void,
  onStop: (gone: Promise<string>) => void,
): Promise<EngineLink> {
  let started = false;
  let died: Promise<string> | undefined;
  const link = new ProcessLink(await entry(), warn, (gone) => {
    if (started) onStop(gone);
    else died = gone;
  });
  try {
    await link.request({ t: "open", settings });
  } catch (error) {
    await link.close().catch(() => undefined);
    // A process that died while loading: how, rather than "send it again".
    if (died) throw new Error(`sql.js storage: the database process stopped while loading the folder (${await died})`);
    throw error;
  }
  started = true;
  return link;
}
