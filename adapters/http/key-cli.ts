/**
 * The API key command line (docs/PROTOCOL.md §19.1): `key add NAME [--user USER]`,
 * `key list [--user USER]` and `key remove NAME [--user USER]`, on the `keys.json` beside the
 * users file. A running server takes a new key at once and closes a removed key's connections
 * within a second.
 * @module
 */
import { fileApiKeyStore, keysFileOf } from "./api-key-file-store.js";
import { apiKeyName, MAX_API_KEY_NAME, MAX_API_KEYS_PER_USER } from "./api-key-store.js";
import { iso, type DeviceCliIO } from "./device-cli.js";
import { addApiKey } from "./keys-api.js";
import { WritableByOthers } from "./private-file.js";
import { terminalText } from "./terminal-text.js";
import { UserStore, UserStoreError } from "./user-store.js";

/** The usage text of the key commands. */
export const KEY_CLI_USAGE = `usage: key add <name> [--user <user>] [--users-file <path>]
       key list [--user <user>] [--users-file <path>]
       key remove <name> [--user <user>] [--users-file <path>]

commands:
  add <name>       make an API key for the doors (/v1/...) called <name>: 1 to ${MAX_API_KEY_NAME} printable
                   characters, one key of a name per user; the key is printed once, never again
  list             list the keys: user, id, name, created (--user: that user's only)
  remove <name>    remove the key of that name (or id); its connections close at once

--user may be left out when the users file has a single user. A name that starts with - goes
after --. A user may have ${MAX_API_KEYS_PER_USER} keys. Removing the user or changing the password removes them.
The keys live (as hashes) in keys.json beside the users file (--users-file or GATEWAY_USERS_FILE).
`;

interface Parsed {
  args: string[];
  file?: string;
  user?: string;
}

/** Positional arguments, the users file and the user; throws a message for a usage error. */
function parse(argv: readonly string[]): Parsed {
  const out: Parsed = { args: [] };
  let options = true;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new Error(`${flag} needs a value`);
      return v;
    };
    if (!options || arg === "-") out.args.push(arg);
    else if (arg === "--") options = false;
    else if (flag === "--users-file") out.file = value();
    else if (flag === "--user") out.user = value();
    else if (arg.startsWith("-")) throw new Error(`unknown option ${arg} (a name starting with - goes after --)`);
    else out.args.push(arg);
  }
  return out;
}

/** Whether the arguments have the shape of a command: `add` and `remove` take a name, `list` none. */
function wellFormed(parsed: Parsed): boolean {
  const [command, name, ...extra] = parsed.args;
  if (extra.length > 0) return false;
  if (command === "list") return name === undefined;
  return (command === "add" || command === "remove") && name !== undefined;
}

/**
 * The users a command acts on: `--user` (which must exist), else the file's only user, else
 * (`list` alone) every user, sorted. Otherwise says why on stderr and gives the exit code:
 * 2 when several users leave `--user` to be named, 1 for an unknown user or an unreadable file.
 */
async function usersFor(file: string, parsed: Parsed, io: DeviceCliIO): Promise<string[] | number> {
  let users: string[];
  try {
    users = [...(await new UserStore(file).read()).keys()].sort();
  } catch (error) {
    io.stderr.write(`${error instanceof UserStoreError ? error.message : String(error)}\n`);
    return 1;
  }
  if (parsed.user !== undefined) {
    if (users.includes(parsed.user)) return [parsed.user];
    io.stderr.write(`${terminalText(`user ${parsed.user} does not exist`)}\n`);
    return 1;
  }
  if (parsed.args[0] === "list" || users.length === 1) return users;
  if (users.length === 0) {
    io.stderr.write(`${terminalText(`no users in ${file}: add one with user add <name>`)}\n`);
    return 1;
  }
  const named = terminalText(users.join(", "));
  io.stderr.write(`the users file has several users (${named}): name one with --user <user>\n\n${KEY_CLI_USAGE}`);
  return 2;
}

/**
 * Runs `key add|list|remove` (the first argument is `key`). Resolves the exit code: 0 success,
 * 1 an unknown user or key, a name in use, a user at the cap, or a store that cannot be read or
 * written, 2 a usage error (a missing `--user` among several users too). Never rejects. The key
 * `add` prints is on stdout alone, so a script can capture it.
 */
export async function runKeyCli(argv: readonly string[], io: DeviceCliIO): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.stderr.write(`${terminalText((error as Error).message)}\n\n${KEY_CLI_USAGE}`);
    return 2;
  }
  if (!wellFormed(parsed)) {
    io.stderr.write(`${parsed.args.length === 0 ? "missing key command" : "bad key command"}\n\n${KEY_CLI_USAGE}`);
    return 2;
  }
  const [command, name] = parsed.args as [string, string | undefined];
  const file = parsed.file ?? (io.env.GATEWAY_USERS_FILE || undefined) ?? io.defaultUsersFile;
  if (file === undefined) {
    io.stderr.write(`no user store: pass --users-file <path> or set GATEWAY_USERS_FILE\n\n${KEY_CLI_USAGE}`);
    return 2;
  }
  const users = await usersFor(file, parsed, io);
  if (typeof users === "number") return users;
  const keys = fileApiKeyStore(keysFileOf(file));
  try {
    if (command === "list") return await list(io, keys, users, parsed.user !== undefined);
    if (command === "add") return await add(io, keys, users[0]!, name!);
    return await remove(io, keys, users[0]!, name!);
  } catch (error) {
    const why = (error as Error)?.message ?? String(error);
    io.stderr.write(
      `${terminalText(error instanceof WritableByOthers ? why : `cannot use API key store ${keysFileOf(file)}: ${why}`)}\n`,
    );
    return 1;
  }
}

type Keys = ReturnType<typeof fileApiKeyStore>;

/** `key list`: one line a key, `user TAB key_id TAB name TAB created <instant>`, users in order. */
async function list(io: DeviceCliIO, keys: Keys, users: string[], oneUser: boolean): Promise<number> {
  let listed = 0;
  for (const user of users)
    for (const k of await keys.list(user)) {
      io.stdout.write(`${[k.username, k.key_id, k.name].map(terminalText).join("\t")}\tcreated ${iso(k.created)}\n`);
      listed++;
    }
  if (listed === 0) io.stderr.write(`${terminalText(oneUser ? `${users[0]} has no API keys` : "no API keys")}\n`);
  return 0;
}

/** `key add`: the key alone on stdout, what it is on stderr. */
async function add(io: DeviceCliIO, keys: Keys, user: string, given: string): Promise<number> {
  const name = apiKeyName(given);
  if (name === undefined) {
    io.stderr.write(`a key name is 1 to ${MAX_API_KEY_NAME} printable characters\n`);
    return 1;
  }
  const made = await addApiKey(
    { keys, maxKeysPerUser: MAX_API_KEYS_PER_USER },
    user,
    name,
    Math.floor(Date.now() / 1000),
  );
  if (made === "taken") {
    io.stderr.write(`${terminalText(`${user} already has a key named ${name}; remove it or pick another name`)}\n`);
    return 1;
  }
  if (made === "full") {
    io.stderr.write(
      `${terminalText(`${user} already has ${MAX_API_KEYS_PER_USER} API keys, the most allowed; remove one first`)}\n`,
    );
    return 1;
  }
  io.stderr.write(
    `${terminalText(`API key ${name} (${made.stored.key_id}) of ${user}; it is shown this once, keep it somewhere safe:`)}\n`,
  );
  io.stdout.write(`key: ${made.key}\n`);
  return 0;
}

/** `key remove`: the key of that name, else the key of that id (a name wins when both match). */
async function remove(io: DeviceCliIO, keys: Keys, user: string, nameOrId: string): Promise<number> {
  const mine = await keys.list(user);
  const found = mine.find((k) => k.name === nameOrId.trim()) ?? mine.find((k) => k.key_id === nameOrId);
  const gone = found && (await keys.remove(user, found.key_id));
  if (gone === undefined) {
    io.stderr.write(`${terminalText(`${user} has no key named ${nameOrId}`)}\n`);
    return 1;
  }
  io.stdout.write(`${terminalText(`removed key ${gone.name} (${gone.key_id}) of ${user}`)}\n`);
  return 0;
}
