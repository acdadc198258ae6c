import { Worker } from "node:worker_threads";

/** One password check for a worker of bcrypt-worker.mjs. */
export interface BcryptTask {
  password: string;
  hash: string;
}

interface Queued {
  task: BcryptTask;
  resolve(matched: boolean): void;
  reject(error: Error): void;
}

/**
 * A fixed pool of worker threads that run bcrypt one check each, in arrival order: the few lines of
 * a thread pool the verifier needs, on `node:worker_threads` (no package to install). Threads
 * start with the first checks and stay; an idle thread does not keep the process alive.
 */
export class BcryptPool {
  readonly #file: string;
  readonly #size: number;
  readonly #idle: Worker[] = [];
  readonly #busy = new Map<Worker, Queued>();
  readonly #waiting: Queued[] = [];

  constructor(file: string, size: number) {
    this.#file = file;
    this.#size = size;
  }

  /** True when `task.password` matches `task.hash`. */
  run(task: BcryptTask): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ task, resolve, reject });
      this.#next();
    });
  }

  /** Stops the threads; checks running or waiting are rejected. */
  async destroy(): Promise<void> {
    const stopped = new Error("password verifier closed");
    for (const queued of this.#waiting.splice(0)) queued.reject(stopped);
    for (const queued of this.#busy.values()) queued.reject(stopped);
    const workers = [...this.#idle.splice(0), ...this.#busy.keys()];
    this.#busy.clear();
    await Promise.all(workers.map((worker) => worker.terminate()));
  }

  #next(): void {
    while (this.#waiting.length > 0) {
      const worker = this.#idle.pop() ?? (this.#busy.size < this.#size ? this.#start() : undefined);
      if (!worker) return;
      const queued = this.#waiting.shift()!;
      this.#busy.set(worker, queued);
      worker.ref(); // a running check keeps the process alive until it answers
      worker.postMessage(queued.task);
    }
  }

  #start(): Worker {
    const worker = new Worker(this.#file);
    worker.on("message", (answer: { matched?: boolean; error?: string }) => {
      const queued = this.#busy.get(worker);
      this.#busy.delete(worker);
      worker.unref();
      this.#idle.push(worker);
      if (answer.error !== undefined) queued?.reject(new Error(`bcrypt worker: ${answer.error}`));
      else queued?.resolve(answer.matched === true);
      this.#next();
    });
    // A thread that dies takes its check with it; the next check starts a new thread.
    worker.on("error", (error) => this.#lost(worker, error));
    worker.on("exit", (code) => this.#lost(worker, new Error(`bcrypt worker exited with code ${code}`)));
    return worker;
  }

  #lost(worker: Worker, error: Error): void {
    const queued = this.#busy.get(worker);
    this.#busy.delete(worker);
    const idle = this.#idle.indexOf(worker);
    if (idle >= 0) this.#idle.splice(idle, 1);
    queued?.reject(error);
    this.#next();
  }
}
