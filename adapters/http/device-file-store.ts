/**
 * A `DeviceTokenStore` in a JSON file beside the users file (docs/PROTOCOL.md §16): paired devices
 * survive a restart, and the device CLI revokes one by editing the file while the server runs.
 * @module
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./atomic-file.js";
import { readPrivateText } from "./private-file.js";
import { deviceTable, type DeviceTokenStore, type StoredDevice } from "./device-store.js";

/** The device store file that goes with a users file: `devices.json` in its folder. */
export function devicesFileOf(usersFile: string): string {
  return path.join(path.dirname(usersFile), "devices.json");
}

/** How often the file is looked at (one `stat`) while someone listens for revocations, in milliseconds. */
const POLL_MS = 250;

function isDevice(value: unknown): value is StoredDevice {
  const d = value as Record<string, unknown>;
  return (
    typeof d === "object" &&
    d !== null &&
    typeof d.device_id === "string" &&
    typeof d.username === "string" &&
    typeof d.name === "string" &&
    typeof d.created === "number" &&
    typeof d.last_seen === "number" &&
    typeof d.token_sha256 === "string" &&
    /^[0-9a-f]{64}$/.test(d.token_sha256)
  );
}

/**
 * The devices a file holds; a missing file holds none. A malformed one is an error: it must not
 * quietly forget devices. So is one that others may write: they could add a device of any user.
 */
async function readDevices(file: string): Promise<Map<string, StoredDevice>> {
  let text: string;
  try {
    text = await readPrivateText(file, "device store", "the devices");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw error;
  }
  const parsed = JSON.parse(text) as { devices?: unknown };
  if (!Array.isArray(parsed?.devices) || !parsed.devices.every(isDevice))
    throw new Error(`device store ${file} is malformed`);
  return new Map(parsed.devices.map((d) => [d.token_sha256, d]));
}

async function signature(file: string): Promise<string> {
  try {
    const s = await fs.stat(file);
    // ctime too: a chmod that lets others write the file must be noticed before anything they write.
    return `${s.ino}:${s.mtimeMs}:${s.ctimeMs}:${s.size}`;
  } catch {
    return "missing";
  }
}

/**
 * A {@link DeviceTokenStore} in a JSON file (mode 0600, replaced atomically), holding only the
 * SHA-256 of each token. The file is read again whenever it changed, so a device revoked by the
 * CLI stops working at the next lookup; while a listener is subscribed the file is looked at every
 * 250 ms and each device that disappeared from it is reported, so its connections close.
 * Changes of one process are serialized; the CLI and the server rarely write at the same moment,
 * and each re-reads the file just before writing.
 */
export function fileDeviceStore(file: string): DeviceTokenStore {
  let table = new Map<string, StoredDevice>();
  let seen = "";
  let queue: Promise<unknown> = Promise.resolve();
  const listeners = new Set<(digest: string) => void>();
  let timer: NodeJS.Timeout | undefined;

  /** Reads the file again when it changed; reports the devices gone from it. */
  async function load(): Promise<void> {
    const now = await signature(file);
    if (now === seen) return;
    const next = await readDevices(file);
    const gone = [...table.keys()].filter((digest) => !next.has(digest));
    table = next;
    seen = now;
    for (const digest of gone) for (const listener of [...listeners]) listener(digest);
  }

  /** Runs a change on the current file and writes the result; one change at a time. */
  function change<T>(apply: (ops: ReturnType<typeof deviceTable>) => Promise<T> | T): Promise<T> {
    const run = queue.then(async () => {
      await load();
      const draft = new Map([...table].map(([k, v]) => [k, { ...v }]));
      const result = await apply(deviceTable(draft));
      await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await writeFileAtomic(file, `${JSON.stringify({ devices: [...draft.values()] }, null, 2)}\n`);
      table = draft;
      seen = await signature(file);
      return result;
    });
    queue = run.catch(() => undefined);
    return run;
  }

  const read = async () => {
    await queue;
    await load();
    return deviceTable(table);
  };

  return {
    add: (device) => change((ops) => ops.add(device)),
    find: async (digest) => (await read()).find(digest),
    touch: (id, now) => change((ops) => ops.touch(id, now)),
    list: async (username) => (await read()).list(username),
    remove: (username, id) => change((ops) => ops.remove(username, id)),
    // A user with no device costs no write (the CLI calls it on every remove and set-password).
    removeUser: async (username) =>
      (await (await read()).list(username)).length === 0 ? [] : change((ops) => ops.removeUser(username)),
    onRevocation(listener) {
      listeners.add(listener);
      timer ??= setInterval(() => void load().catch(() => undefined), POLL_MS);
      timer.unref();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer !== undefined) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },
  };
}
