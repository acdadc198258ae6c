/**
 * Push to an owner none of whose devices is connected, through the sender each device declared.
 * @module
 */
import type { Bus } from "../contracts/bus.js";
import type { PushMessage, PushSender } from "../contracts/push.js";
import type { Storage } from "../contracts/storage.js";
import type { DeviceId, Owner } from "../ids.js";
import type { Logger } from "../logger.js";

/** What away-push reads and sends through. */
export interface AwayPushParts {
  push: PushSender[];
  pushRetry: { attempts: number; backoffMs: number };
  storage: Storage;
  bus: Bus;
  log: Logger;
  /** Connections of the owner in this process. */
  connectionCount(owner: Owner): number;
}

/** Sends a push to an owner who is away, or does nothing. */
export type PushIfAway = (owner: Owner, message: PushMessage) => void;

/**
 * Push to each of the owner's devices with a target, when none of them is connected. A device
 * is reached only through the sender it declared in `caps.push` (`"none"`: never). Never
 * rejects: failures are retried with backoff, then logged.
 */
export function awayPush(parts: AwayPushParts): PushIfAway {
  const { push, storage, bus, log } = parts;
  return (owner, message) => {
    if (push.length === 0 || parts.connectionCount(owner) > 0) return;
    void (async () => {
      if (bus.connected && (await bus.connected(owner).catch(() => false))) return;
      const devices = await storage.listDevices(owner);
      for (const device of devices) {
        const wanted = device.caps?.push;
        if (!wanted || wanted === "none") continue;
        const sender = push.find((s) => s.name === wanted && s.accepts(device));
        if (sender) void pushWithRetry(parts, owner, device.device_id, () => sender.send(owner, device, message), sender.name);
      }
    })().catch((error) => log.warn("push: listing devices failed", error));
  };
}

async function pushWithRetry(parts: AwayPushParts, owner: Owner, deviceId: DeviceId, send: () => Promise<void>, name: string): Promise<void> {
  const { attempts, backoffMs } = parts.pushRetry;
  for (let attempt = 1; ; attempt++) {
    try {
      await send();
      return;
    } catch (error) {
      const permanent = Boolean((error as { permanent?: boolean }).permanent);
      if (permanent || attempt > attempts) {
        parts.log.warn(`push via ${name} to device ${deviceId} of ${owner} failed${permanent ? " permanently" : ` after ${attempt} attempts`}`, error);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, backoffMs * 2 ** (attempt - 1)));
    }
  }
}
