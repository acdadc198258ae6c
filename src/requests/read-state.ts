/**
 * Read state (docs/PROTOCOL.md §15): `read` moves a lane's watermark forward and tells every
 * device of the owner; `channel.list` counts what is newer than the watermarks.
 * @module
 */
import type { Device } from "../contracts/records.js";
import type { Storage } from "../contracts/storage.js";
import { GatewayError } from "../protocol/errors.js";
import type { Owner } from "../protocol/ids.js";
import type { StoreChange } from "../outbox/outbox.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import type { ResolveLane } from "../channels/channel-directory.js";
import type { RetractRead } from "../push/read-retraction.js";

/** The most `unread` a channel entry shows (docs/PROTOCOL.md §15). */
export const UNREAD_CAP = 999;

/** What `read` reads and writes through. */
export interface ReadStateServices {
  readonly storage: Storage;
  readonly store: StoreChange;
  readonly resolveLane: ResolveLane;
  /** Clears the read messages' pushes on the owner's other targets (docs/PROTOCOL.md §21.4). */
  readonly retractRead: RetractRead;
}

/**
 * `read`: the device has shown the lane up to `message_id`. A message of another lane, or an
 * unknown one, is `not_found` and stores nothing. A read not newer than the lane's watermark
 * stores and sends nothing: the watermark never moves back. A read that moves it clears the
 * pushes of the answers it covers on the owner's other push targets (docs/PROTOCOL.md §21.4).
 */
export async function markRead(
  services: ReadStateServices,
  owner: Owner,
  device: Device,
  payload: ClientPayloads["read"],
): Promise<void> {
  if (!services.storage.capabilities.readState)
    throw new GatewayError("unsupported", "read: this gateway's storage keeps no read state");
  const lane = await services.resolveLane(owner, payload.chat_id, payload.thread_id);
  const message = await services.storage.getMessage(owner, payload.message_id);
  if (!message || message.chat_id !== lane.chat_id || (message.thread_id ?? null) !== lane.thread_id) {
    throw new GatewayError("not_found", `read: message ${JSON.stringify(payload.message_id)} is not in this lane`);
  }
  const mark = { chat_id: lane.chat_id, thread_id: lane.thread_id, message_id: message.message_id, ts: message.ts };
  const stored = await services.store(owner, { read: mark }, [
    { type: "read", payload: { ...mark, device_id: device.device_id } },
  ]);
  if (stored.length > 0) services.retractRead(owner, device.device_id, mark);
}

/**
 * `unread` per channel entry: a thread its own lane's count, a channel its flat lane's and its
 * threads', at most {@link UNREAD_CAP}. Empty without the `readState` capability.
 */
export async function unreadByChannel(storage: Storage, owner: Owner): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (!storage.capabilities.readState) return counts;
  const add = (chatId: string, n: number) => counts.set(chatId, Math.min(UNREAD_CAP, (counts.get(chatId) ?? 0) + n));
  for (const lane of await storage.unreadCounts(owner, UNREAD_CAP)) {
    add(lane.chat_id, lane.unread);
    if (lane.thread_id !== null) add(lane.thread_id, lane.unread);
  }
  return counts;
}
