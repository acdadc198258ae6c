/**
 * The paired-device command line (docs/PROTOCOL.md §16): `device list <user>` and
 * `device revoke <user> <device_id>`, on the `devices.json` beside the users file. A running
 * server notices a revocation within a second and closes that device's connections with 4401.
 * @module
 */
import { devicesFileOf, fileDeviceStore } from "./device-file-store.js";
import { WritableByOthers } from "./private-file.js";
import { terminalText } from "./terminal-text.js";
import { UserStore, UserStoreError } from "./user-store.js";

/** What the device commands print to and read settings from; `process` provides all of it. */
export interface DeviceCliIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Environment; `GATEWAY_USERS_FILE` names the users file when no `--users-file` is given. */
  env: Record<string, string | undefined>;
  /** Users file when neither the flag nor the variable gives one. */
  defaultUsersFile?: string;
}

/** The usage text of the device commands. */
export const DEVICE_CLI_USAGE = `usage: device <command> <user> [device_id] [--users-file <path>]
       device revoke <user> -- <device_id>   (an id that starts with -)

commands:
  list <user>                 list the user's paired devices: id, name, created, last seen
  revoke <user> <device_id>   revoke a paired device and the devices it paired; their connections close at once

The devices live in devices.json beside the users file (--users-file or GATEWAY_USERS_FILE).
`;

/** A Unix time as an ISO 8601 instant without milliseconds. */
export function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Positional arguments and the users file; throws a message for a usage error. */
function parse(argv: readonly string[]): { args: string[]; file?: string } {
  const args: string[] = [];
  let file: string | undefined;
  let options = true;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    // After `--` every argument is positional: an id paired before ids stopped starting with `-`.
    if (!options || arg === "-") args.push(arg);
    else if (arg === "--") options = false;
    else if (arg === "--users-file") file = argv[++i];
    else if (arg.startsWith("--users-file=")) file = arg.slice("--users-file=".length);
    else if (arg.startsWith("-")) throw new Error(`unknown option ${arg} (an id starting with - goes after --)`);
    else args.push(arg);
    if (file === "") throw new Error("--users-file needs a path");
  }
  return { args: args.slice(1), ...(file !== undefined ? { file } : {}) };
}

/**
 * Whether `user` is in the users file; says why not on stderr. An unknown name is refused rather
 * than listed as having no devices, so a typo or the wrong users file does not pass for success.
 */
export async function knownUser(file: string, user: string, io: DeviceCliIO): Promise<boolean> {
  try {
    if ((await new UserStore(file).read()).has(user)) return true;
    io.stderr.write(`${terminalText(`user ${user} does not exist`)}\n`);
  } catch (error) {
    io.stderr.write(`${error instanceof UserStoreError ? error.message : String(error)}\n`);
  }
  return false;
}

/**
 * Runs `device list|revoke` (the first argument is `device`). Resolves the exit code: 0 success,
 * 1 an unknown user or device or a store that cannot be read or written, 2 a usage error. Never rejects.
 */
export async function runDeviceCli(argv: readonly string[], io: DeviceCliIO): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.stderr.write(`${terminalText((error as Error).message)}\n\n${DEVICE_CLI_USAGE}`);
    return 2;
  }
  const [command, user, id, ...extra] = parsed.args;
  const shape = command === "list" ? id === undefined : command === "revoke" && id !== undefined && extra.length === 0;
  if (!shape || user === undefined) {
    io.stderr.write(
      `${command === undefined ? "missing device command" : `bad device command`}\n\n${DEVICE_CLI_USAGE}`,
    );
    return 2;
  }
  const file = parsed.file ?? (io.env.GATEWAY_USERS_FILE || undefined) ?? io.defaultUsersFile;
  if (file === undefined) {
    io.stderr.write(`no user store: pass --users-file <path> or set GATEWAY_USERS_FILE\n\n${DEVICE_CLI_USAGE}`);
    return 2;
  }
  if (!(await knownUser(file, user, io))) return 1;
  const store = fileDeviceStore(devicesFileOf(file));
  try {
    if (command === "list") {
      const devices = await store.list(user);
      for (const d of devices)
        io.stdout.write(
          `${terminalText(d.device_id)}\t${terminalText(d.name)}\tcreated ${iso(d.created)}\tlast seen ${iso(d.last_seen)}\n`,
        );
      if (devices.length === 0) io.stderr.write(`${terminalText(`${user} has no paired devices`)}\n`);
      return 0;
    }
    const gone = await store.remove(user, id!);
    if (gone.length === 0) {
      io.stderr.write(`${terminalText(`${user} has no device ${id}`)}\n`);
      return 1;
    }
    // The devices it paired go with it (docs/PROTOCOL.md §16): each is named, so none goes unnoticed.
    for (const d of gone)
      io.stdout.write(
        `${terminalText(`revoked ${d.device_id} (${d.name}) of ${user}${d === gone[0] ? "" : `, paired by ${d.paired_by}`}`)}\n`,
      );
    return 0;
  } catch (error) {
    const why = (error as Error)?.message ?? String(error);
    io.stderr.write(
      `${terminalText(error instanceof WritableByOthers ? why : `cannot use device store ${devicesFileOf(file)}: ${why}`)}\n`,
    );
    return 1;
  }
}
