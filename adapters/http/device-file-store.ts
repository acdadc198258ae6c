/**
 * A `DeviceTokenStore` in a JSON file beside the users file (docs/PROTOCOL.md §16): paired devices
 * survive a restart, and the device CLI revokes one by editing the file while the server runs.
 * @module
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./atomic-file.js";
import { withFileLock } from "./file-lock.js";
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
    /^[0-9a-f]{64}$/.test(d.token_sha256) &&
    (d.paired_by === undefined || typeof d.paired_by === "string")
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

/** The file's text for a table of devices. */
function text(devices: Map<string, StoredDevice>): string {
  return `${JSON.stringify({ devices: [...devices.values()] }, null, 2)}\n`;
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
 * SHA-256 of each token. Every change is a read-modify-write under the lock file `<file>.lock`
 * shared with every other process using the file (the CLI, a second server): the file is read
 * again under the lock, the one change applied, the result written to a temp file, fsynced and
 * renamed over it. So a revocation by the CLI is never undone by a pairing or a `last_seen` of
 * the server. Lookups (`find`, `list`) read an in-memory copy swapped in after each write and
 * re-read when the file changed; they never wait for a write. While a listener is subscribed the
 * file is looked at every 250 ms and each device that disappeared from it is reported, so its
 * connections close.
 */
export function fileDeviceStore(file: string): DeviceTokenStore {
  let table = new Map<string, StoredDevice>();
  let seen = "";
  /** Grows with each copy swapped in: a read of the file that started before a newer swap is dropped. */
  let version = 0;
  let loading: Promise<void> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const listeners = new Set<(digest: string) => void>();
  let timer: NodeJS.Timeout | undefined;

  /** Makes `next` the copy lookups read; reports the devices gone from it. */
  function swap(next: Map<string, StoredDevice>, signed: string): void {
    const gone = [...table.keys()].filter((digest) => !next.has(digest));
    table = next;
    seen = signed;
    version++;
    for (const digest of gone) for (const listener of [...listeners]) listener(digest);
  }

  /** Reads the file again when it changed (one read at a time); never waits for a write. */
  function load(): Promise<void> {
    loading ??= (async () => {
      const started = version;
      const signed = await signature(file);
      if (signed === seen) return;
      const next = await readDevices(file);
      if (version === started) swap(next, signed);
    })().finally(() => {
      loading = undefined;
    });
    return loading;
  }

  /** Applies one change to the file's current content under the cross-process lock; one change at a time here. */
  function change<T>(apply: (ops: ReturnType<typeof deviceTable>) => Promise<T>): Promise<T> {
    const run = queue.then(async () => {
      await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      return withFileLock(`${file}.lock`, async () => {
        const draft = await readDevices(file);
        const before = text(draft);
        const result = await apply(deviceTable(draft));
        // A refused add, a touch of a revoked device or a revocation of none costs no write.
        if (text(draft) !== before) await writeFileAtomic(file, text(draft));
        swap(draft, await signature(file));
        return result;
      });
    });
    queue = run.catch(() => undefined);
    return run;
  }

  const read = async () => {
    await load();
    return deviceTable(table);
  };

  return {
    add: (device, max) => change((ops) => ops.add(device, max)),
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
