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
export function writeDevice(storage: Storage, owner: Owner, deviceId: DeviceId, next: (stored: Device | undefined) => Device): Promise<Device> {
  let chains = tails.get(storage);
  if (!chains) tails.set(storage, (chains = new Map()));
  const key = `${owner}\u0000${deviceId}`;
  const write = (chains.get(key) ?? Promise.resolve()).catch(() => undefined).then(async () => {
    const device = next(await storage.getDevice(owner, deviceId));
    await storage.putDevice(owner, device);
    return device;
  });
  chains.set(key, write);
  void write.then(
    () => chains.get(key) === write && chains.delete(key),
    () => chains.get(key) === write && chains.delete(key),
  );
  return write;
}
