/**
 * The API key command line (docs/PROTOCOL.md §19.1): `key add <user> [--label L]`,
 * `key list <user>` and `key revoke <user> <key_id>`, on the `keys.json` beside the users file.
 * A running server takes a new key at once and closes a revoked key's connections within a second.
 * @module
 */
import { fileApiKeyStore, keysFileOf } from "./api-key-file-store.js";
import { MAX_API_KEYS_PER_USER } from "./api-key-store.js";
import { iso, knownUser, type DeviceCliIO } from "./device-cli.js";
import { addApiKey } from "./keys-api.js";
import { WritableByOthers } from "./private-file.js";
import { terminalText } from "./terminal-text.js";

/** The usage text of the key commands. */
export const KEY_CLI_USAGE = `usage: key <command> <user> [key_id] [--label <text>] [--users-file <path>]

commands:
  add <user> [--label L]      make an API key for the doors (/v1/...); it is printed once, never again
  list <user>                 list the user's keys: id, label, created
  revoke <user> <key_id>      revoke a key; its connections close at once

A user may have ${MAX_API_KEYS_PER_USER} keys. Removing the user or changing the password revokes them.
The keys live (as hashes) in keys.json beside the users file (--users-file or GATEWAY_USERS_FILE).
`;

interface Parsed {
  args: string[];
  file?: string;
  label?: string;
}

/** Positional arguments, the users file and the label; throws a message for a usage error. */
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
    else if (flag === "--label") out.label = value();
    else if (arg.startsWith("-")) throw new Error(`unknown option ${arg} (an id starting with - goes after --)`);
    else out.args.push(arg);
  }
  return out;
}

/** Whether the arguments have the shape of a command; `--label` goes with `add` only. */
function wellFormed(parsed: Parsed): boolean {
  const [command, user, id, ...extra] = parsed.args;
  if (user === undefined || extra.length > 0) return false;
  if (command === "revoke") return id !== undefined && parsed.label === undefined;
  if (command === "list") return id === undefined && parsed.label === undefined;
  return command === "add" && id === undefined && (parsed.label ?? "").length <= 64;
}

/**
 * Runs `key add|list|revoke` (the first argument is `key`). Resolves the exit code: 0 success,
 * 1 an unknown user or key, a user at the cap, or a store that cannot be read or written, 2 a
 * usage error. Never rejects. The key `add` prints is on stdout alone, so a script can capture it.
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
  const [command, user, id] = parsed.args as [string, string, string | undefined];
  const file = parsed.file ?? (io.env.GATEWAY_USERS_FILE || undefined) ?? io.defaultUsersFile;
  if (file === undefined) {
    io.stderr.write(`no user store: pass --users-file <path> or set GATEWAY_USERS_FILE\n\n${KEY_CLI_USAGE}`);
    return 2;
  }
  if (!(await knownUser(file, user, io))) return 1;
  const keys = fileApiKeyStore(keysFileOf(file));
  try {
    if (command === "add") return await add(io, keys, user, parsed.label?.trim() ?? "");
    if (command === "list") {
      const listed = await keys.list(user);
      for (const k of listed)
        io.stdout.write(`${terminalText(k.key_id)}\t${terminalText(k.label)}\tcreated ${iso(k.created)}\n`);
      if (listed.length === 0) io.stderr.write(`${terminalText(`${user} has no API keys`)}\n`);
      return 0;
    }
    const gone = await keys.remove(user, id!);
    if (gone === undefined) {
      io.stderr.write(`${terminalText(`${user} has no key ${id}`)}\n`);
      return 1;
    }
    io.stdout.write(`${terminalText(`revoked key ${gone.key_id} of ${user}`)}\n`);
    return 0;
  } catch (error) {
    const why = (error as Error)?.message ?? String(error);
    io.stderr.write(
      `${terminalText(error instanceof WritableByOthers ? why : `cannot use API key store ${keysFileOf(file)}: ${why}`)}\n`,
    );
    return 1;
  }
}

/** `key add`: the key alone on stdout, what it is on stderr. */
async function add(io: DeviceCliIO, keys: ReturnType<typeof fileApiKeyStore>, user: string, label: string) {
  const made = await addApiKey(
    { keys, maxKeysPerUser: MAX_API_KEYS_PER_USER },
    user,
    label,
    Math.floor(Date.now() / 1000),
  );
  if (made === "full") {
    io.stderr.write(
      `${terminalText(`${user} already has ${MAX_API_KEYS_PER_USER} API keys, the most allowed; revoke one first`)}\n`,
    );
    return 1;
  }
  io.stderr.write(
    `${terminalText(`API key ${made.stored.key_id} of ${user}; it is shown this once, keep it somewhere safe:`)}\n`,
  );
  io.stdout.write(`key: ${made.key}\n`);
  return 0;
}
