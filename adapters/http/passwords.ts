import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import bcrypt from "bcryptjs";
import { GatewayError } from "chat-gateway/protocol";
import { BcryptPool } from "./bcrypt-pool.js";
import { LOGIN_LIMITS } from "./limits.js";

/**
 * A cost-12 hash of a random string nobody knows. Unknown usernames are checked against it, so a
 * login for a name that does not exist costs the same bcrypt time as one that does.
 */
export const DUMMY_HASH = "$2b$12$uyc0r52PpBqdCkwcrppjGeoJUpd7K9r9eVvAYAjXyEGsH.UFMG38u";

/** `$2a$`, `$2b$` or `$2y$`, a two-digit cost, 22 salt and 31 hash characters. */
const BCRYPT_HASH = /^\$2[aby]\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/;

/** True when `hash` looks like a bcrypt hash this library can verify. */
export function isBcryptHash(hash: string): boolean {
  return BCRYPT_HASH.test(hash);
}

/**
 * Hashes a new password: bcrypt `$2b$`, cost 12. Runs on the calling thread (about 350 ms of CPU),
 * which suits the user CLI; a server checks passwords with a {@link PasswordVerifier}.
 */
export function hashPassword(password: string): Promise<string> {
  return bcrypt.hash(password, LOGIN_LIMITS.bcryptCost);
}

/**
 * Cuts a login password to what bcrypt reads, so that a huge one costs nothing extra: the string
 * ends at the first character boundary at or after byte 72. bcrypt then uses exactly the first 72
 * bytes, the same bytes a byte-wise cut would keep (a cut inside a character could not be
 * represented as a string and would change the bytes).
 */
export function truncatePassword(password: string): string {
  if (password.length * 3 <= LOGIN_LIMITS.maxPasswordBytes) return password;
  let bytes = 0;
  let end = 0;
  for (const char of password) {
    if (bytes >= LOGIN_LIMITS.maxPasswordBytes) break;
    bytes += Buffer.byteLength(char, "utf8");
    end += char.length;
  }
  return password.slice(0, end);
}

/** Options of {@link PasswordVerifier}. */
export interface PasswordVerifierOptions {
  /** Worker threads that run bcrypt. Default 2 (about 5 checks per second at cost 12). */
  workers?: number;
  /**
   * Checks allowed to wait for a free worker. A check beyond `workers + maxQueue` is refused at
   * once with a `rate_limited` {@link GatewayError} (HTTP 429). Default 32.
   */
  maxQueue?: number;
}

/**
 * Where the worker lives: next to this module, in the sources and in the build alike. The CommonJS
 * build has an empty `import.meta`; its `__filename` (the bundle) is in the same folder.
 */
const WORKER_FILE = fileURLToPath(
  new URL("./bcrypt-worker.mjs", typeof import.meta.url === "string" ? import.meta.url : pathToFileURL(__filename)),
);

/**
 * Checks passwords against bcrypt hashes on a small pool of worker threads, so that the event
 * loop keeps serving streams while logins run, with a bounded queue so that a login storm is
 * refused instead of piling up.
 */
export class PasswordVerifier {
  readonly #workers: number;
  readonly #capacity: number;
  #pool: BcryptPool | undefined;
  #pending = 0;
  #closed = false;

  /**
   * Threads start with the first check, not here.
   * @throws {TypeError} on a bad option, or when the worker file is missing from the installation
   */
  constructor(options: PasswordVerifierOptions = {}) {
    const workers = options.workers ?? 2;
    const maxQueue = options.maxQueue ?? 32;
    if (!Number.isInteger(workers) || workers < 1)
      throw new TypeError("PasswordVerifier: workers must be an integer >= 1");
    if (!Number.isInteger(maxQueue) || maxQueue < 0)
      throw new TypeError("PasswordVerifier: maxQueue must be an integer >= 0");
    if (!existsSync(WORKER_FILE))
      throw new TypeError(`PasswordVerifier: the bcrypt worker ${WORKER_FILE} is missing from the installed package`);
    this.#workers = workers;
    this.#capacity = workers + maxQueue;
  }

  /** Checks running or waiting now. */
  get pending(): number {
    return this.#pending;
  }

  /** Checks that may run or wait at once: `workers + maxQueue`. */
  get capacity(): number {
    return this.#capacity;
  }

  /** True when a new check would be refused. */
  get full(): boolean {
    return this.#pending >= this.#capacity;
  }

  /**
   * True when `password` (cut to 72 bytes) matches `hash`. An absent or malformed hash costs the
   * same time as a real one and yields false.
   * @throws {GatewayError} `rate_limited` when the queue is full
   */
  async verify(password: string, hash: string | undefined): Promise<boolean> {
    if (this.#closed) throw new GatewayError("internal", "password verifier closed");
    if (this.full) throw new GatewayError("rate_limited", "too many logins at once; try again shortly");
    const usable = hash !== undefined && isBcryptHash(hash);
    this.#pending++;
    try {
      this.#pool ??= new BcryptPool(WORKER_FILE, this.#workers);
      const matched = await this.#pool.run({
        password: truncatePassword(password),
        hash: usable ? hash : DUMMY_HASH,
      });
      return usable && matched;
    } finally {
      this.#pending--;
    }
  }

  /** Stops the worker threads. Checks still running are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.destroy();
  }
}
