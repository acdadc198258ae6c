import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ChannelBatch } from "./channel-batch.js";
import { fromWire, type EngineCall, type EngineLink, type FromEngine, type ToEngine } from "./engine-calls.js";
import type { EngineSettings } from "./engine.js";

/** The CommonJS build has an empty `import.meta`; its `__filename` (the bundle) is in the same folder. */
const HERE = typeof import.meta.url === "string" ? import.meta.url : pathToFileURL(__filename).href;

/**
 * The database process's entry: from the build, the plain module beside this bundle; from the
 * TypeScript sources, a bundle of them made on first use (see `engine-source.ts`).
 */
async function entry(): Promise<string> {
  if (!HERE.endsWith(".ts")) return fileURLToPath(new URL("./sqljs-engine.js", HERE));
  // A specifier the bundler leaves alone: the build never includes the sources' bundler.
  const source = new URL("./engine-source.ts", HERE).href;
  const { engineBundle } = (await import(source)) as { engineBundle: () => Promise<string> };
  return engineBundle();
}

/** A message to the database process before it is given its id. */
type Request = ToEngine extends infer T ? (T extends ToEngine ? Omit<T, "id"> : never) : never;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * The storage's side of the database process: requests out, replies in, matched by id. The
 * channel keeps the serving process alive only while a reply is awaited, so a storage nobody
 * closed does not hold the process open. Should the database process die, every pending and later
 * call fails with the reason; what was acknowledged is on disk.
 */
class ProcessLink implements EngineLink {
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, Pending>();
  readonly #exited: Promise<void>;
  /** Requests leave once per tick, as one message (see {@link ChannelBatch}). */
  readonly #out: ChannelBatch<ToEngine>;
  #next = 0;
  #gone: Error | undefined;

  constructor(file: string, warn: (message: string) => void) {
    // No inherited execArgv: the parent's flags (a loader, an inspector port) are not this process's.
    this.#child = fork(file, [], { execArgv: [], serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.#out = new ChannelBatch((messages, done) => this.#child.send(messages, done));
    this.#child.on("message", (messages: FromEngine[]) => {
      for (const message of messages) {
        if (message.t === "warn") {
          warn(message.message);
          continue;
        }
        const pending = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (message.error) pending?.reject(fromWire(message.error));
        else pending?.resolve(message.value);
      }
      this.#idle();
    });
    this.#exited = new Promise((resolve) => {
      this.#child.once("exit", (code, signal) => {
        this.#gone = new Error(`sql.js storage: the database process stopped (${signal ?? `exit code ${code}`})`);
        for (const p of this.#pending.values()) p.reject(this.#gone);
        this.#pending.clear();
        resolve();
      });
      // A process that could not be started never exits: close() must not wait for it.
      this.#child.once("error", (error) => {
        this.#gone ??= error;
        for (const p of this.#pending.values()) p.reject(error);
        this.#pending.clear();
        if (this.#child.pid === undefined) resolve();
      });
    });
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
    const id = ++this.#next;
    this.#child.ref();
    this.#child.channel?.ref();
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#out.push({ ...message, id } as ToEngine, (error) => {
        if (!this.#pending.delete(id)) return;
        reject(this.#gone ?? error);
        this.#idle();
      });
    });
  }

  call(call: EngineCall): Promise<unknown> {
    return this.request({ t: "call", call });
  }

  async close(): Promise<void> {
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

/** Starts the database process and loads the folder in it; rejects with the reason it could not. */
export async function startEngineProcess(settings: EngineSettings, warn: (message: string) => void): Promise<EngineLink> {
  const link = new ProcessLink(await entry(), warn);
  try {
    await link.request({ t: "open", settings });
  } catch (error) {
    await link.close().catch(() => undefined);
    throw error;
  }
  return link;
}
