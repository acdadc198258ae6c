/**
 * Which of an owner's devices one push goes to (docs/PROTOCOL.md §6): an owner's device records
 * grow with every new `device_id` a `hello` names, so a message's pushes are bounded by the targets,
 * not by the records, and one target registered by several records is pushed once.
 * @module
 */
import type { PushSender } from "../contracts/push.js";
import type { Device } from "../contracts/records.js";

/**
 * The most targets one message is pushed to: the owner's most recently seen devices. Without it
 * an owner's client could register thousands of device ids and make every answer a burst of
 * requests to the push services with the operator's credentials.
 */
export const MAX_PUSH_TARGETS = 16;

/** A device and the sender that pushes to it. */
export interface PushTarget {
  device: Device;
  sender: PushSender;
}

/**
 * The devices to push to, most recently seen first: each through the sender its `caps.push` names
 * (never for "none"), one per distinct target (a topic, a token, a subscription's endpoint), at
 * most {@link MAX_PUSH_TARGETS}.
 */
export function pushTargets(devices: readonly Device[], senders: readonly PushSender[]): PushTarget[] {
  const newestFirst = [...devices].sort((a, b) => b.last_seen - a.last_seen);
  const seen = new Set<string>();
  const targets: PushTarget[] = [];
  for (const device of newestFirst) {
    const wanted = device.caps?.push;
    if (!wanted || wanted === "none") continue;
    const sender = senders.find((s) => s.name === wanted && s.accepts(device));
    if (!sender) continue;
    const key = targetKey(sender, device);
    if (seen.has(key)) continue;
    seen.add(key);
    targets.push({ device, sender });
    if (targets.length === MAX_PUSH_TARGETS) break;
  }
  return targets;
}

/**
 * What the built-in senders deliver to; another sender's target is known only to it, so each of
 * its devices counts as a target of its own.
 */
export function targetKey(sender: PushSender, device: Device): string {
  const target =
    sender.name === "ntfy"
      ? device.ntfy_topic
      : sender.name === "fcm"
        ? device.fcm_token
        : sender.name === "webpush"
          ? device.webpush?.endpoint
          : undefined;
  return JSON.stringify([sender.name, target === undefined ? "device" : "target", target ?? device.device_id]);
}
