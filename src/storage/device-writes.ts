/**
 * Writes of a device record, one at a time per device in this process: each reads the stored
 * record when its turn comes, so a push target that another connection of the same device just
 * registered (`hello`, `fcm.register`, docs/PROTOCOL.md §6) is kept instead of overwritten with an
 * older copy.
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { Device } from "../contracts/records.js";
import type { Storage } from "../contracts/storage.js";
import type { DeviceId, Owner } from "../protocol/ids.js";

/** Per storage (so two gateways on one process keep apart) and per device: the last write queued. */
const tails = new WeakMap<Storage, Map<string, Promise<unknown>>>();

/**
 * How stale a stored `last_seen` may get before a write that changes nothing else rewrites it (ms):
 * a reconnecting fleet (a restart, a network blip) then costs no write per hello, and `last_seen`
 * is still right to within an hour, as the HTTP device store keeps its own (`DEVICE_TOUCH_SECONDS`).
 */
export const LAST_SEEN_GRANULARITY_MS = 3_600_000;

/**
 * Stores `next(stored)` for the device, after the writes of it queued before; resolves with what is
 * stored. A record equal to the stored one but for a `last_seen` less than
 * {@link LAST_SEEN_GRANULARITY_MS} later is not written again; it resolves with the stored `last_seen`.
 */
export function writeDevice(
  storage: Storage,
  owner: Owner,
  deviceId: DeviceId,
  next: (stored: Device | undefined) => Device,
): Promise<Device> {
  return inTurn(storage, owner, deviceId, async () => {
    const stored = await storage.getDevice(owner, deviceId);
    const device = next(stored);
    if (stored && device.last_seen - stored.last_seen < LAST_SEEN_GRANULARITY_MS && sameButSeen(stored, device)) {
      return device.last_seen === stored.last_seen ? device : { ...device, last_seen: stored.last_seen };
    }
    await storage.putDevice(owner, device);
    return device;
  });
}

/**
 * Equal but for `last_seen`, by Node's own deep equality: a key set to undefined on one side
 * only makes them differ, which costs one write more, never one too few.
 */
function sameButSeen(stored: Device, device: Device): boolean {
  return isDeepStrictEqual({ ...stored, last_seen: 0 }, { ...device, last_seen: 0 });
}

/**
 * Changes the stored record of a device in its turn, like {@link writeDevice}, but stores nothing
 * when the device is not stored (any more) or `change` returns undefined: a change must not bring
 * back a record it did not find.
 */
export function changeDevice(
  storage: Storage,
  owner: Owner,
  deviceId: DeviceId,
  change: (stored: Device) => Device | undefined,
): Promise<Device | undefined> {
  return inTurn(storage, owner, deviceId, async () => {
    const stored = await storage.getDevice(owner, deviceId);
    const next = stored && change(stored);
    if (next) await storage.putDevice(owner, next);
    return next;
  });
}

/** Runs `work` after the writes of this device queued before it in this process. */
function inTurn<T>(storage: Storage, owner: Owner, deviceId: DeviceId, work: () => Promise<T>): Promise<T> {
  let chains = tails.get(storage);
  if (!chains) {
    chains = new Map();
    tails.set(storage, chains);
  }
  const key = `${owner}\u0000${deviceId}`;
  const write = (chains.get(key) ?? Promise.resolve()).catch(() => undefined).then(work);
  chains.set(key, write);
  void write.then(
    () => chains.get(key) === write && chains.delete(key),
    () => chains.get(key) === write && chains.delete(key),
  );
  return write;
}
