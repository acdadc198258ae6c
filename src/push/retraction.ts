/**
 * Retraction (docs/PROTOCOL.md §21): once an ask resolves, every other push target that was sent
 * its push gets one clearing push, so a phone does not keep showing buttons of an ask already
 * answered on the laptop. The target that answered gets none. Who was sent the push is known from
 * the ask's action tokens (kept by the storage, so any process can retract) and from this
 * process's own sends.
 * @module
 */
import { askPushKey } from "./due-payload.js";
import type { PushMessage, PushSender } from "../contracts/push.js";
import type { Storage } from "../contracts/storage.js";
import type { Logger } from "../contracts/logger.js";
import type { Owner } from "../protocol/ids.js";
import { pushTargets, targetKey } from "./push-fan-out.js";
import { laneUrl, type PublicUrls } from "./public-url.js";

/** Asks whose sent targets a process remembers. */
const SENT_KEPT = 10_000;

/** The targets this process sent each ask's push to, by owner and ask, and the asks resolved here. */
export class SentPushes {
  readonly #sent = new Map<string, Map<string, string>>();
  readonly #resolved = new Set<string>();

  /** The push of `message` reached the target `key` of device `deviceId`. */
  add(owner: Owner, message: PushMessage, deviceId: string, key: string): void {
    if (message.picker_id === undefined || message.clear) return;
    const id = JSON.stringify([owner, message.picker_id]);
    let targets = this.#sent.get(id);
    if (!targets) {
      targets = new Map();
      this.#sent.set(id, targets);
      if (this.#sent.size > SENT_KEPT) this.#sent.delete(this.#sent.keys().next().value as string);
    }
    targets.set(key, deviceId);
  }

  /** The ask resolved here: a push of it that still waits in this process is not sent (docs/PROTOCOL.md §21.6). */
  resolved(owner: Owner, pickerId: string): void {
    this.#resolved.add(JSON.stringify([owner, pickerId]));
    if (this.#resolved.size > SENT_KEPT) this.#resolved.delete(this.#resolved.values().next().value as string);
  }

  /** Whether the ask resolved in this process. */
  wasResolved(owner: Owner, pickerId: string): boolean {
    return this.#resolved.has(JSON.stringify([owner, pickerId]));
  }

  /** The targets (key → device id) sent the ask's push here; forgotten as they are taken. */
  take(owner: Owner, pickerId: string): Map<string, string> {
    const id = JSON.stringify([owner, pickerId]);
    const targets = this.#sent.get(id) ?? new Map<string, string>();
    this.#sent.delete(id);
    return targets;
  }
}

/** How an ask ended, as its `picker.resolved` payload says. */
export interface ResolvedAsk {
  picker_id: string;
  chat_id?: string;
  thread_id?: string | null;
  outcome: unknown;
  option_id?: unknown;
  device_id?: unknown;
  device_name?: unknown;
}

/** Clears an ask's push on the other targets; never rejects. */
export type RetractPush = (owner: Owner, title: string, resolved: ResolvedAsk) => void;

/** What retraction reads and sends through. */
export interface RetractionParts {
  push: PushSender[];
  storage: Storage;
  log: Logger;
  publicUrls: PublicUrls;
  sent: SentPushes;
}

/** The retraction of a gateway: one clearing push per other target, once per ask. */
export function pushRetraction(parts: RetractionParts): RetractPush {
  return (owner, title, resolved) =>
    void retract(parts, owner, title, resolved).catch((error) =>
      parts.log.warn("push: retracting an ask's push failed", error),
    );
}

async function retract(parts: RetractionParts, owner: Owner, title: string, resolved: ResolvedAsk): Promise<void> {
  // A push still waiting for the ask is not sent once it resolved (docs/PROTOCOL.md §21.6): the
  // stored one is taken, so neither the process waiting on it nor a later claim sends it; one
  // waiting in memory only is this process's, as the ask was.
  parts.sent.resolved(owner, resolved.picker_id);
  await parts.storage.duePushes
    ?.dropDuePush(owner, askPushKey(resolved.picker_id))
    .catch((error) => parts.log.warn("push: dropping a resolved ask's waiting push failed", error));
  const sent = parts.sent.take(owner, resolved.picker_id);
  const tokens = await parts.storage.actionTokens?.actionTokensOf(owner, resolved.picker_id);
  for (const token of tokens ?? []) sent.set(token.target, token.device_id);
  if (sent.size === 0) return;
  const message = clearing(parts, owner, title, resolved);
  for (const { device, sender } of pushTargets(await parts.storage.listDevices(owner), parts.push)) {
    const key = targetKey(sender, device);
    // The target that answered already knows; every other one that was sent the ask, once.
    if (!sent.has(key) || device.device_id === resolved.device_id) continue;
    sent.delete(key);
    sender
      .send(owner, device, message)
      .catch((error) =>
        parts.log.warn(`push via ${sender.name}: clearing on device ${device.device_id} failed`, error),
      );
  }
}

/** The clearing push: the ask's tag, no buttons, what happened ("Approved on Pixel"). */
function clearing(parts: RetractionParts, owner: Owner, title: string, resolved: ResolvedAsk): PushMessage {
  const message: PushMessage = {
    kind: "notification",
    title,
    body: outcomeText(resolved),
    picker_id: resolved.picker_id,
    clear: true,
  };
  if (resolved.chat_id !== undefined) {
    message.chat_id = resolved.chat_id;
    message.thread_id = resolved.thread_id ?? null;
    message.url = laneUrl(parts.publicUrls.of(owner), message);
  }
  return message;
}

function outcomeText(resolved: ResolvedAsk): string {
  const where = typeof resolved.device_name === "string" ? resolved.device_name : "another device";
  if (resolved.outcome !== "selected") return "No longer open.";
  if (resolved.option_id === "approve") return `Approved on ${where}`;
  if (resolved.option_id === "deny") return `Denied on ${where}`;
  return `Answered on ${where}`;
}
