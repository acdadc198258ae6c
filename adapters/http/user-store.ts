import { promises as fs } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./atomic-file.js";
import { LOGIN_LIMITS } from "./limits.js";
import { readPrivateText, WritableByOthers } from "./private-file.js";

/**
 * A "value error" of the user store: a bad username or password, a duplicate or unknown user, or a
 * user store that cannot be read, created or written. Not a protocol error; the user CLI prints
 * its message and exits with 1.
 */
export class UserStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UserStoreError";
  }
}

/** The state of a user store file (docs/PROTOCOL.md §9.7). */
export type UserStoreState = "absent" | "empty" | "unreadable" | "enabled";

/** What the server sees in the user store at one moment. */
export interface UserStoreSnapshot {
  /**
   * `enabled` when at least one usable user is present (login protection on). A file that holds no
   * string entries reads as `empty`; one that exists but cannot be read, is malformed, or that
   * group or other users may write reads as `unreadable` (a server that read it before keeps its
   * last good set, docs/PROTOCOL.md §9.7).
   */
  readonly state: UserStoreState;
  /** Username to bcrypt hash; entries that were not string pairs are left out. */
  readonly users: ReadonlyMap<string, string>;
  /** Why the file was (partly) ignored: unreadable, malformed, or entries dropped. */
  readonly problem?: string;
}

const USERNAME = /^[A-Za-z0-9_.-]{1,32}$/;

/** The message for an invalid username. */
export const INVALID_USERNAME_MESSAGE =
  "invalid username: use 1 to 32 characters (letters, digits, underscore, hyphen, full stop)";

/** True for 1 to 32 ASCII letters, digits, underscores, hyphens and full stops. */
export function isValidUsername(name: string): boolean {
  return USERNAME.test(name);
}

/** @throws {UserStoreError} with the invalid-username message when `name` is not a valid username. */
export function checkUsername(name: string): void {
  if (!isValidUsername(name)) throw new UserStoreError(INVALID_USERNAME_MESSAGE);
}

/**
 * Checks a password being set (`user add`, `user set-password`): not empty, at most 72 bytes of UTF-8.
 * @throws {UserStoreError}
 */
export function checkNewPassword(password: string): void {
  if (password.length === 0) throw new UserStoreError("password must not be empty");
  const bytes = Buffer.byteLength(password, "utf8");
  if (bytes > LOGIN_LIMITS.maxPasswordBytes) {
    throw new UserStoreError(
      `password is too long: ${bytes} bytes of UTF-8, at most ${LOGIN_LIMITS.maxPasswordBytes} allowed`,
    );
  }
}

type Parsed = { users: Map<string, string>; dropped: number } | { malformed: string };

function parse(text: string): Parsed {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { malformed: `not valid JSON (${(error as Error).message})` };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return { malformed: "not a JSON object" };
  const table = (data as Record<string, unknown>).users;
  if (typeof table !== "object" || table === null || Array.isArray(table)) return { malformed: 'no "users" object' };
  const users = new Map<string, string>();
  let dropped = 0;
  for (const [name, hash] of Object.entries(table)) {
    if (typeof hash === "string") users.set(name, hash);
    else dropped++;
  }
  return { users, dropped };
}

/** No file there: also when a folder on the way is missing or is a file (the write then says which). */
function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** The users file's text; one that others may write is refused: they could give themselves any user's login. */
function readUsersText(file: string): Promise<string> {
  return readPrivateText(file, "user store", "the users");
}

function reason(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  const message = String(e?.message ?? e);
  return e?.code && !message.startsWith(e.code) ? `${e.code}: ${message}` : message;
}

/**
 * The user store: a JSON file `{"users": {name: bcrypt hash}}`, shared by the server and the user
 * CLI. The server reads it leniently through {@link UserStore.current} (a file it cannot use reads as
 * `unreadable`, with no users and the reason, docs/PROTOCOL.md §9.7) and notices every change the CLI
 * makes; the CLI reads it strictly and writes it atomically.
 */
export class UserStore {
  /** Absolute path of the file. */
  readonly path: string;
  #cacheKey: string | undefined;
  #cached: UserStoreSnapshot | undefined;
  #refreshing: Promise<UserStoreSnapshot> | undefined;

  /** @param file path of the JSON file; it need not exist yet. */
  constructor(file: string) {
    if (typeof file !== "string" || file === "") throw new TypeError("UserStore: a file path is required");
    this.path = path.resolve(file);
  }

  /**
   * The server's view, re-read only when the file changed. Each call costs one `stat`, so a
   * change made by the CLI (an atomic rename, hence a new inode) applies to the next request.
   */
  current(): Promise<UserStoreSnapshot> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<UserStoreSnapshot> {
    let key: string;
    try {
      const s = await fs.stat(this.path);
      key = `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
    } catch (error) {
      key = `error:${(error as NodeJS.ErrnoException).code ?? "?"}`;
    }
    if (key !== this.#cacheKey || this.#cached === undefined) {
      this.#cached = await this.load();
      this.#cacheKey = key;
    }
    return this.#cached;
  }

  /** Reads the file now, leniently: never throws. */
  async load(): Promise<UserStoreSnapshot> {
    let text: string;
    try {
      text = await readUsersText(this.path);
    } catch (error) {
      if (isMissing(error)) return { state: "absent", users: new Map() };
      const problem =
        error instanceof WritableByOthers ? error.message : `cannot read user store ${this.path}: ${reason(error)}`;
      return { state: "unreadable", users: new Map(), problem };
    }
    const parsed = parse(text);
    if ("malformed" in parsed) {
      return { state: "unreadable", users: new Map(), problem: `user store ${this.path} is ${parsed.malformed}` };
    }
    const problem =
      parsed.dropped > 0
        ? `user store ${this.path}: ${parsed.dropped} entries that are not string pairs were ignored`
        : undefined;
    return { state: parsed.users.size > 0 ? "enabled" : "empty", users: parsed.users, ...(problem ? { problem } : {}) };
  }

  /**
   * Reads the file strictly, for changing it: absent is no users; unreadable, malformed or
   * writable by group or other users is a {@link UserStoreError} (so a hand-edited file with a
   * typo, or one someone else may have changed, is never taken over). Entries that are not string
   * pairs are dropped.
   */
  async read(): Promise<Map<string, string>> {
    let text: string;
    try {
      text = await readUsersText(this.path);
    } catch (error) {
      if (isMissing(error)) return new Map();
      if (error instanceof WritableByOthers) throw new UserStoreError(error.message);
      throw new UserStoreError(`cannot read user store ${this.path}: ${reason(error)}`, { cause: error });
    }
    const parsed = parse(text);
    if ("malformed" in parsed)
      throw new UserStoreError(`user store ${this.path} is ${parsed.malformed}; fix or remove it`);
    return parsed.users;
  }

  /** The state as the CLI sees it: like {@link UserStore.load}. */
  async state(): Promise<UserStoreState> {
    try {
      const users = await this.read();
      if (users.size > 0) return "enabled";
      return (await this.load()).state === "absent" ? "absent" : "empty";
    } catch {
      return "unreadable";
    }
  }

  /**
   * Adds a user with an already computed bcrypt hash.
   * @throws {UserStoreError} invalid username, existing user, or the file cannot be read or written
   */
  async add(username: string, hash: string): Promise<void> {
    checkUsername(username);
    const users = await this.read();
    if (users.has(username)) throw new UserStoreError(`user ${username} already exists`);
    users.set(username, hash);
    await this.write(users);
  }

  /**
   * Replaces the hash of an existing user.
   * @throws {UserStoreError} unknown user, or the file cannot be read or written
   */
  async setHash(username: string, hash: string): Promise<void> {
    const users = await this.read();
    if (!users.has(username)) throw new UserStoreError(`user ${username} does not exist`);
    users.set(username, hash);
    await this.write(users);
  }

  /**
   * Removes a user; returns how many remain (0: login protection is now off).
   * @throws {UserStoreError} unknown user, or the file cannot be read or written
   */
  async remove(username: string): Promise<number> {
    const users = await this.read();
    if (!users.delete(username)) throw new UserStoreError(`user ${username} does not exist`);
    await this.write(users);
    return users.size;
  }

  /**
   * Replaces the whole file: temp file in the same folder, mode 0600, fsync, rename over the
   * old file, so a reader sees the old or the new content and never a torn one. The parent folder
   * is created (mode 0700) when missing.
   * @throws {UserStoreError} naming the folder or file that could not be created or written
   */
  async write(users: ReadonlyMap<string, string>): Promise<void> {
    const dir = path.dirname(this.path);
    try {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new UserStoreError(`cannot create folder ${dir} for user store ${this.path}: ${reason(error)}`, {
        cause: error,
      });
    }
    // A null-prototype object keeps a user called "__proto__" an ordinary key.
    const table: Record<string, string> = Object.create(null);
    for (const name of [...users.keys()].sort()) table[name] = users.get(name)!;
    const text = `${JSON.stringify({ users: table }, null, 2)}\n`;
    try {
      await writeFileAtomic(this.path, text);
    } catch (error) {
      throw new UserStoreError(`cannot write user store ${this.path}: ${reason(error)}`, { cause: error });
    }
  }
}

/** Creates a {@link UserStore} for a file path. */
export function createUserStore(file: string): UserStore {
  return new UserStore(file);
}
