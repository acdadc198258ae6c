/**
 * A `DeviceTokenStore` in a JSON file beside the users file (docs/PROTOCOL.md §16): paired devices
 * survive a restart, and the device CLI revokes one by editing the file while the server runs.
 * @module
 */
import path from "node:path";
import { lockedTableFile } from "./locked-table-file.js";
import { deviceTable, type DeviceTokenStore, type StoredDevice } from "./device-store.js";

/** The device store file that goes with a users file: `devices.json` in its folder. */
export function devicesFileOf(usersFile: string): string {
  return path.join(path.dirname(usersFile), "devices.json");
}

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
  const store = lockedTableFile(file, {
    field: "devices",
    what: "device store",
    contents: "the devices",
    isRecord: isDevice,
    keyOf: (d) => d.token_sha256,
  });
  const change = <T>(apply: (ops: ReturnType<typeof deviceTable>) => Promise<T>) =>
    store.change((draft) => apply(deviceTable(draft)));
  const read = async () => deviceTable(await store.read());
  return {
    add: (device, max) => change((ops) => ops.add(device, max)),
    find: async (digest) => (await read()).find(digest),
    touch: (id, now) => change((ops) => ops.touch(id, now)),
    list: async (username) => (await read()).list(username),
    remove: (username, id) => change((ops) => ops.remove(username, id)),
    // A user with no device costs no write (the CLI calls it on every remove and set-password).
    removeUser: async (username) =>
      (await (await read()).list(username)).length === 0 ? [] : change((ops) => ops.removeUser(username)),
    onRevocation: (listener) => store.onGone(listener),
  };
}
