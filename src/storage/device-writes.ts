/**
 * Writes of a device record, one at a time per device in this process: each reads the stored
 * record when its turn comes, so a push target that another connection of the same device just
 * registered (`hello`, `fcm.register`, docs/PROTOCOL.md §6) is kept instead of overwritten with an
 * older copy.
 * @module
 */
import type { Device } from "../contracts/records.js";
import type { Storage } from "../contracts/storage.js";
import type { DeviceId, Owner } from "../protocol/ids.js";

/** Per storage (so two gateways on one process keep apart) and per device: the last write queued. */
const tails = new WeakMap<Storage, Map<string, Promise<unknown>>>();

/** Stores `next(stored)` for the device, after the writes of it queued before; resolves with what was stored. */
export function writeDevice(
  storage: Storage,
  owner: Owner,
  deviceId: DeviceId,
  next: (stored: Device | undefined) => Device,
): Promise<Device> {
  return inTurn(storage, owner, deviceId, async () => {
    const device = next(await storage.getDevice(owner, deviceId));
    await storage.putDevice(owner, device);
    return device;
  });
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
