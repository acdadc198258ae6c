import { fileApiKeyStore, keysFileOf } from "./api-key-file-store.js";
import { runDeviceCli } from "./device-cli.js";
import { devicesFileOf, fileDeviceStore } from "./device-file-store.js";
import { becomeFolderOwner } from "./folder-owner.js";
import { runKeyCli } from "./key-cli.js";
import {
  describeAdoption,
  prepareAdoption,
  serverAdoption,
  type AdoptionServer,
  type PendingAdoption,
  type UserCliData,
} from "./adopt-anonymous.js";
import { hashPassword } from "./passwords.js";
import { WritableByOthers } from "./private-file.js";
import { terminalText } from "./terminal-text.js";
import { checkNewPassword, checkUsername, UserStore, UserStoreError } from "./user-store.js";

/** The terminal and environment the user CLI talks to; `process` provides all of it. */
export interface UserCliIO {
  /** Where the password comes from. On a terminal it must offer `setRawMode` (as `process.stdin` does). */
  stdin: NodeJS.ReadableStream & { setRawMode?(raw: boolean): unknown };
  /** Results (`list` output, confirmations). */
  stdout: NodeJS.WritableStream;
  /** Prompts, value errors and usage. */
  stderr: NodeJS.WritableStream;
  /** True when `stdin` is a terminal: the password is then prompted twice without echo. */
  isTTY: boolean;
  /**
   * Effective user id; default `process.geteuid()`. When it is 0 (root), the CLI first becomes the
   * owner of the users file's folder (see {@link runUserCli}).
   */
  uid?: number;
  /** Environment; `GATEWAY_USERS_FILE` names the store when no `--users-file` is given. */
  env: Record<string, string | undefined>;
  /** Store path when neither the flag nor the variable gives one (the example server passes its data folder's). */
  defaultUsersFile?: string;
  /**
   * The gateway's storage and media store, made on demand: the first `user add` hands the
   * anonymous owner's chats to the new user through them unless `--no-adopt` is given
   * (docs/PROTOCOL.md §10.4). Absent, nothing is adopted.
   */
  data?: () => UserCliData | Promise<UserCliData>;
  /**
   * The server running on that data, when one answers: the first `user add` then has it move the
   * anonymous owner's chats through its own open storage instead of opening the storage here,
   * which a server holding it (sql.js) refuses. Resolves undefined when no server runs.
   */
  server?: () => Promise<AdoptionServer | undefined>;
}

/** The usage text of the user CLI. */
export const USER_CLI_USAGE = `usage: user <command> [name] [--users-file <path>] [--adopt | --no-adopt]

commands:
  add <name>           create a user; the first user may adopt the chats, messages and
                       media made while login was off (not its devices): it shows them,
                       counted, and asks (y/N); with no terminal to ask, only --adopt
                       adopts them; --no-adopt neither asks nor adopts
  list                 list usernames, sorted
  remove <name>        delete a user
  set-password <name>  replace a user's password

  device list <name>                 list the user's paired devices
  device revoke <name> <id>          revoke one (its connections close at once)
  key add <key> [--user <name>]      make an API key called <key> for the doors; printed once
  key list [--user <name>]           list the API keys (every user's, or one's)
  key remove <key> [--user <name>]   remove one (its connections close at once)

Removing a user or changing the password also revokes the user's paired devices and API keys.
The password is prompted for (twice, without echo) or, when standard input is not a
terminal, read from its first line. The store is --users-file or GATEWAY_USERS_FILE.
Run it as the user the server runs as; run by root, it acts as the owner of the
store's folder, so the files it writes stay readable by the server.
`;

class UsageError extends Error {}
class Interrupted extends Error {}

interface Parsed {
  command: "add" | "list" | "remove" | "set-password" | "help";
  name?: string;
  file?: string;
  noAdopt?: boolean;
  adopt?: boolean;
}

function parse(argv: readonly string[]): Parsed {
  const positional: string[] = [];
  let file: string | undefined;
  let noAdopt = false;
  let adopt = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") return { command: "help" };
    if (arg === "--no-adopt") {
      noAdopt = true;
    } else if (arg === "--adopt") {
      adopt = true;
    } else if (arg === "--users-file") {
      file = argv[++i];
      if (file === undefined || file === "") throw new UsageError("--users-file needs a path");
    } else if (arg.startsWith("--users-file=")) {
      file = arg.slice("--users-file=".length);
      if (file === "") throw new UsageError("--users-file needs a path");
    } else if (arg === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    } else if (arg.startsWith("-") && arg !== "-") {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      positional.push(arg);
    }
  }
  const [group, command, ...rest] = positional;
  if (group !== "user") throw new UsageError(group === undefined ? "missing command" : `unknown command ${group}`);
  if (command === "list") {
    if (rest.length > 0) throw new UsageError("list takes no name");
    return { command, ...(file !== undefined ? { file } : {}) };
  }
  if ((noAdopt || adopt) && command !== "add")
    throw new UsageError(`${noAdopt ? "--no-adopt" : "--adopt"} goes with add only`);
  if (noAdopt && adopt) throw new UsageError("--adopt and --no-adopt exclude each other");
  if (command === "add" || command === "remove" || command === "set-password") {
    if (rest.length !== 1) throw new UsageError(`${command} takes exactly one name`);
    return { command, name: rest[0]!, noAdopt, adopt, ...(file !== undefined ? { file } : {}) };
  }
  throw new UsageError(command === undefined ? "missing user command" : `unknown user command ${command}`);
}

/** The first line of a non-terminal stdin, without its line ending. */
function readLine(stdin: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const finish = (line: string) => {
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onError);
      stdin.pause();
      resolve(line.endsWith("\r") ? line.slice(0, -1) : line);
    };
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      const nl = text.indexOf("\n");
      if (nl >= 0) finish(text.slice(0, nl));
    };
    const onEnd = () => finish(text);
    const onError = (error: Error) => reject(error);
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    stdin.on("error", onError);
    stdin.resume();
  });
}

/** Reads one line from a terminal in raw mode, echoing nothing. */
function promptHidden(io: UserCliIO, prompt: string): Promise<string> {
  const { stdin, stderr } = io;
  if (typeof stdin.setRawMode !== "function")
    return Promise.reject(new UserStoreError("cannot turn off echo on this terminal"));
  // Echo goes off before the prompt shows, so nothing typed after seeing it is ever echoed.
  stdin.setRawMode(true);
  stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let line = "";
    const done = () => {
      stdin.off("data", onData);
      stdin.setRawMode!(false);
      stdin.pause();
      stderr.write("\n");
    };
    const onData = (chunk: Buffer | string) => {
      for (const char of chunk.toString()) {
        if (char === "\r" || char === "\n" || char === "\u0004") {
          done();
          resolve(line);
          return;
        }
        if (char === "\u0003") {
          done();
          reject(new Interrupted());
          return;
        }
        if (char === "\u007f" || char === "\b") line = Array.from(line).slice(0, -1).join("");
        else line += char;
      }
    };
    stdin.on("data", onData);
    stdin.resume();
  });
}

async function readCheckedPassword(io: UserCliIO): Promise<string> {
  const password = await readPassword(io);
  checkNewPassword(password);
  return password;
}

/**
 * What a user loses with a removal or a new password: the paired devices and the API keys. Both
 * stores are read once first: one that cannot be used (others may write it, or it is malformed)
 * stops the change before it is made, not after the user or the password changed with them in it.
 */
async function credentialsOf(store: UserStore): Promise<{ removeUser(name: string): Promise<unknown> }> {
  const devices = fileDeviceStore(devicesFileOf(store.path));
  const keys = fileApiKeyStore(keysFileOf(store.path));
  await Promise.all([devices.list(""), keys.list("")]);
  return { removeUser: (name) => Promise.all([devices.removeUser(name), keys.removeUser(name)]) };
}

/**
 * Adopts first, then writes the user: a failure in between leaves the user missing, and running
 * `user add` again finds nothing left to adopt and adds it.
 */
async function addUser(
  io: UserCliIO,
  store: UserStore,
  name: string,
  first: boolean,
  adopting: PendingAdoption | undefined,
): Promise<void> {
  const hash = await hashPassword(await readCheckedPassword(io));
  const adopted = await adopting?.run();
  await store.add(name, hash);
  io.stdout.write(`${terminalText(first ? `added ${name}; login protection is on` : `added ${name}`)}\n`);
  if (adopted) io.stdout.write(`${terminalText(describeAdoption(adopted, name))}\n`);
}

/**
 * Whether the person said yes to the adoption just shown (docs/PROTOCOL.md §10.4): `--adopt`, or
 * "y" to the question on a terminal. Anything else adopts nothing: what was written while login
 * was off may have been written by anyone on the loopback port, for the agent to read as context.
 */
async function adoptionConsented(io: UserCliIO, name: string, flag: boolean): Promise<boolean> {
  if (flag) return true;
  if (io.isTTY) {
    io.stderr.write(`${terminalText(`Adopt them into ${name}'s history? [y/N] `)}`);
    if (/^\s*y(es)?\s*$/i.test(await readLine(io.stdin))) return true;
  }
  const why = io.isTTY ? "not adopted" : "not adopted (no terminal to ask)";
  io.stdout.write(
    `${terminalText(`${why}: the chats stay with login off; to adopt them, remove ${name} and add it again with --adopt`)}\n`,
  );
  return false;
}

/** The first user's adoption: made by the running server when one answers, else here. */
async function adoption(io: UserCliIO, to: string): Promise<PendingAdoption | undefined> {
  const server = await io.server?.();
  if (server) return serverAdoption(server, to);
  return io.data ? prepareAdoption(await io.data(), to) : undefined;
}

async function readPassword(io: UserCliIO): Promise<string> {
  if (!io.isTTY) return readLine(io.stdin);
  const first = await promptHidden(io, "Password: ");
  checkNewPassword(first);
  const second = await promptHidden(io, "Repeat password: ");
  if (first !== second) throw new UserStoreError("passwords do not match");
  return first;
}

/** What the CLI says of a failure: a value error's own message; anything else is marked unexpected. */
function failureText(error: unknown): string {
  if (error instanceof UserStoreError || error instanceof WritableByOthers) return error.message;
  return `unexpected error: ${(error as Error)?.message ?? String(error)}`;
}

/**
 * The user-management command line of docs/PROTOCOL.md §10.4: `user add|list|remove|set-password [name]`
 * with `--users-file <path>` (or `GATEWAY_USERS_FILE`). No command needs root: run it as the user
 * the server runs as. Run by root, `add`, `remove` and `set-password` first switch to the owner
 * (uid and gid) of the users file's folder, so the users file and the database and media files an
 * adoption writes belong to that owner, with their usual modes, and the server can still read
 * them (docs/PROTOCOL.md §10.4). With `io.data`, the first `add` (login turning on) shows the anonymous
 * owner's chats, messages, outbox and media, counted (never its devices, listed before the
 * password is asked for), and moves them to the new user only on a yes: "y" to the question on a
 * terminal, or `--adopt`; `--no-adopt` neither asks nor moves. The move goes through `io.server` when a server runs on
 * that data, else by opening the storage here. It refuses, before asking for the password, a
 * storage without the `adoptOwner` capability, one it cannot open (a server holding it that
 * does not answer), or a name that already has data. Resolves the exit
 * code: 0 success, 1 a value error (its message on stderr), 2 a usage error. Never rejects.
 *
 * @example A script that is the whole CLI
 * ```ts
 * import { runUserCli } from "chat-gateway/cli";
 * process.exitCode = await runUserCli(process.argv.slice(2), {
 *   stdin: process.stdin, stdout: process.stdout, stderr: process.stderr,
 *   isTTY: Boolean(process.stdin.isTTY), env: process.env,
 * });
 * ```
 */
export async function runUserCli(argv: readonly string[], io: UserCliIO): Promise<number> {
  if (argv[0] === "device") return runDeviceCli(argv, io);
  if (argv[0] === "key") return runKeyCli(argv, io);
  let parsed: Parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.stderr.write(`${terminalText((error as Error).message)}\n\n${USER_CLI_USAGE}`);
    return 2;
  }
  if (parsed.command === "help") {
    io.stdout.write(USER_CLI_USAGE);
    return 0;
  }
  const file = parsed.file ?? (io.env.GATEWAY_USERS_FILE || undefined) ?? io.defaultUsersFile;
  if (file === undefined) {
    io.stderr.write(`no user store: pass --users-file <path> or set GATEWAY_USERS_FILE\n\n${USER_CLI_USAGE}`);
    return 2;
  }
  const store = new UserStore(file);
  try {
    if (parsed.command === "list") {
      const names = [...(await store.read()).keys()].sort();
      // Names a hand-edited users file holds are not checked, and any of them may be printed.
      for (const name of names) io.stdout.write(`${terminalText(name)}\n`);
      if (names.length === 0) io.stderr.write("no users: login protection is off\n");
      return 0;
    }
    await becomeFolderOwner(store.path, io.uid ?? process.geteuid?.());
    const name = parsed.name!;
    if (parsed.command === "remove") {
      const credentials = await credentialsOf(store);
      const left = await store.remove(name);
      // Also done by a running server, which notices; done here for one that is stopped.
      await credentials.removeUser(name);
      const said = left === 0 ? `removed ${name}; no users left, login protection is off` : `removed ${name}`;
      io.stdout.write(`${terminalText(said)}\n`);
      return 0;
    }
    // Refuse before asking for a password that would be thrown away.
    const users = await store.read();
    if (parsed.command === "add") {
      checkUsername(name);
      if (users.has(name)) throw new UserStoreError(`user ${name} already exists`);
      let adopting = users.size === 0 && !parsed.noAdopt ? await adoption(io, name) : undefined;
      // It names channels that anyone who reached the server while login was off may have named.
      if (adopting) io.stdout.write(`${terminalText(adopting.plan)}\n`);
      if (adopting && !(await adoptionConsented(io, name, parsed.adopt === true))) {
        await adopting.close();
        adopting = undefined;
      }
      try {
        await addUser(io, store, name, users.size === 0, adopting);
      } finally {
        await adopting?.close();
      }
      return 0;
    }
    if (!users.has(name)) throw new UserStoreError(`user ${name} does not exist`);
    const credentials = await credentialsOf(store);
    await store.setHash(name, await hashPassword(await readCheckedPassword(io)));
    await credentials.removeUser(name);
    io.stdout.write(`${terminalText(`password of ${name} changed; its sessions end`)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof Interrupted) {
      io.stderr.write("interrupted\n");
      return 1;
    }
    io.stderr.write(`${terminalText(failureText(error))}\n`);
    return 1;
  }
}
