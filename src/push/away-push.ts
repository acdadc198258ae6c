/**
 * Push that follows attention (docs/PROTOCOL.md §15): an answer or an ask is pushed to the
 * owner's push targets unless a device reads it within `pushAfterMs`, at once when no device of
 * the owner is connected; a plain notification only when none is. With the storage's `duePushes`
 * capability a push is stored before it is waited on, and sent by whoever takes it back
 * (docs/PROTOCOL.md §21.6).
 * @module
 */
import type { Bus } from "../contracts/bus.js";
import type { PushMessage, PushSender } from "../contracts/push.js";
import type { ReadMark, Storage } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import type { Device } from "../contracts/records.js";
import { changeDevice } from "../storage/device-writes.js";
import { pushTargets, targetKey } from "./push-fan-out.js";
import { TargetHealth } from "./target-health.js";
import type { Logger } from "../contracts/logger.js";
import { laneUrl, type PublicUrls } from "./public-url.js";
import { mintActions, type AskOffer } from "./action-tokens.js";
import type { SentPushes } from "./retraction.js";
import { duePushOf, duePushRecord, type DuePush } from "./due-payload.js";
import type { DuePushRecord } from "../contracts/due-pushes.js";
import { isReadable, settleUnsent, writeReceipt } from "./read-retraction.js";
import { sleep, type Clock } from "../support/clock.js";

/** What away-push reads and sends through. */
export interface AwayPushParts {
  push: PushSender[];
  pushRetry: { attempts: number; backoffMs: number };
  /** How long a connected device has to read an answer or an ask before it is pushed (ms). */
  pushAfterMs: number;
  storage: Storage;
  bus: Bus;
  log: Logger;
  /** The gateway's time, epoch ms: how long a failing target rests, when a stored push falls due. */
  now: () => number;
  /** The gateway's clock, which the waits before a push and between retries run on. */
  clock: Clock;
  /** Connections of the owner in this process. */
  connectionCount(owner: Owner): number;
  /** Where each owner's pushes lead (docs/PROTOCOL.md §21). */
  publicUrls: PublicUrls;
  /** Records the targets each ask's push reached, for retraction (docs/PROTOCOL.md §21). */
  sent?: SentPushes;
}

/** What away-push works with: its parts, and the failing targets it remembers. */
interface PushParts extends AwayPushParts {
  health: TargetHealth;
  /** When this process last forgot expired action tokens (epoch ms). */
  purged: number;
}

/** How often a process forgets expired action tokens, at most (ms). */
const PURGE_EVERY_MS = 3_600_000;

/**
 * Sends a push when the owner's attention is elsewhere, or does nothing. With `offer` (an ask's
 * options), each target's push carries action buttons (docs/PROTOCOL.md §21).
 */
export type PushIfAway = (owner: Owner, message: PushMessage, offer?: AskOffer) => void;

/** How many pushed keys a process remembers to push each message once. */
const CLAIMS_KEPT = 10_000;

/** How many stored pushes one claim takes at most. */
const CLAIM_BATCH = 100;

/** Push that follows attention, and the sending of stored pushes that fell due (docs/PROTOCOL.md §21.6). */
export interface AwayPush {
  pushIfAway: PushIfAway;
  /**
   * Claims the stored pushes due at or before `dueBy` (epoch ms) and sends each unless a read
   * covers it; resolves with how many it claimed. Nothing without the `duePushes` capability or
   * without senders (another process may have them).
   */
  sendOverdue(dueBy: number): Promise<number>;
}

/**
 * Push to the owner's devices with a target, through the sender each declared in `caps.push`
 * (`"none"`: never), each target once and at most the most recently seen 16 of them. Answers (`message_id`) and asks (`picker_id`) wait
 * `pushAfterMs` while a device is connected and are dropped when a read covers them by then;
 * each is pushed at most once per target by this process. Never rejects: failures are retried
 * with backoff, then logged; a target whose pushes keep failing rests, then is dropped
 * (`TargetHealth`).
 */
export function awayPush(given: AwayPushParts): AwayPush {
  const parts: PushParts = { ...given, health: new TargetHealth(given.now), purged: 0 };
  const claimed = new Set<string>();
  return {
    pushIfAway: (owner, message, offer) => {
      if (parts.push.length === 0) return;
      const key = claimKey(owner, message);
      if (key !== undefined && !remember(claimed, key)) return;
      const led =
        message.chat_id === undefined ? message : { ...message, url: laneUrl(parts.publicUrls.of(owner), message) };
      void decide(parts, owner, led, key !== undefined, offer).catch((error) =>
        parts.log.warn("push: deciding failed", error),
      );
    },
    sendOverdue: (dueBy) => sendOverdue(parts, claimed, dueBy),
  };
}

/** Adds the key; false when it was there already (this process pushed that message). */
function remember(claimed: Set<string>, key: string): boolean {
  if (claimed.has(key)) return false;
  claimed.add(key);
  if (claimed.size > CLAIMS_KEPT) claimed.delete(claimed.values().next().value as string);
  return true;
}

/** The key of a message that follows attention; undefined for a plain notification. */
function claimKey(owner: Owner, message: PushMessage): string | undefined {
  if (message.message_id !== undefined) return JSON.stringify([owner, "m", message.message_id]);
  if (message.picker_id !== undefined) return JSON.stringify([owner, "p", message.picker_id]);
  return undefined;
}

async function decide(
  parts: PushParts,
  owner: Owner,
  message: PushMessage,
  followsAttention: boolean,
  offer: AskOffer | undefined,
): Promise<void> {
  if (!(await isAway(parts, owner))) {
    if (!followsAttention) return;
    const before = await laneMark(parts.storage, owner, message);
    const stored = await storeDue(parts, owner, { message, offer, before });
    await sleep(parts.clock, parts.pushAfterMs, true);
    // Stored: only the process that takes it back sends it (another one may have, after a pause).
    if (stored && !(await takeBack(parts, stored))) return;
    if (message.picker_id !== undefined && parts.sent?.wasResolved(owner, message.picker_id)) return;
    if (await wasRead(parts.storage, owner, message, before)) return;
  }
  await pushToDevices(parts, owner, message, offer);
}

/** Stores the push before it is waited on; undefined when it is not stored (no capability, a failure). */
async function storeDue(parts: PushParts, owner: Owner, push: DuePush): Promise<DuePushRecord | undefined> {
  const store = parts.storage.duePushes;
  const record = store && duePushRecord(owner, push, parts.now() + parts.pushAfterMs);
  if (!store || !record) return undefined;
  try {
    await store.addDuePush(record);
    return record;
  } catch (error) {
    parts.log.warn("push: storing a waiting push failed; it waits in this process only", error);
    return undefined;
  }
}

/** True when this process took its stored push back; a failure leaves it stored for a later claim. */
async function takeBack(parts: PushParts, record: DuePushRecord): Promise<boolean> {
  try {
    return await parts.storage.duePushes!.dropDuePush(record.owner, record.key);
  } catch (error) {
    parts.log.warn("push: taking back a waiting push failed; a later claim sends it", error);
    return false;
  }
}

async function sendOverdue(parts: PushParts, claimed: Set<string>, dueBy: number): Promise<number> {
  const store = parts.storage.duePushes;
  if (!store || parts.push.length === 0) return 0;
  let count = 0;
  for (;;) {
    const batch = await store.claimDuePushes(dueBy, CLAIM_BATCH);
    for (const record of batch)
      void sendClaimed(parts, claimed, record).catch((error) =>
        parts.log.warn("push: sending a due push failed", error),
      );
    count += batch.length;
    if (batch.length < CLAIM_BATCH) return count;
  }
}

/** A claimed push is this process's alone: sent unless a read covers it by now. */
async function sendClaimed(parts: PushParts, claimed: Set<string>, record: DuePushRecord): Promise<void> {
  const push = duePushOf(record);
  if (!push) {
    parts.log.warn(`push: a stored push of ${record.owner} could not be read; dropped`);
    return;
  }
  remember(claimed, claimKey(record.owner, push.message)!);
  if (await wasRead(parts.storage, record.owner, push.message, push.before)) return;
  await pushToDevices(parts, record.owner, push.message, push.offer);
}

async function isAway(parts: AwayPushParts, owner: Owner): Promise<boolean> {
  if (parts.connectionCount(owner) > 0) return false;
  return !(parts.bus.connected && (await parts.bus.connected(owner).catch(() => false)));
}

/** The watermark of the message's lane, read from storage so a read in any process counts. */
async function laneMark(storage: Storage, owner: Owner, message: PushMessage): Promise<ReadMark | undefined> {
  if (message.chat_id === undefined) return undefined;
  const threadId = message.thread_id ?? null;
  return (await storage.readMarks(owner)).find(
    (m) => m.chat_id === message.chat_id && (m.thread_id ?? null) === threadId,
  );
}

/**
 * An answer is read when its lane's watermark reaches it by `(ts, message_id)`; an ask, which has
 * no message of its own in the lane, when the lane's watermark moved since the ask was raised.
 */
async function wasRead(
  storage: Storage,
  owner: Owner,
  message: PushMessage,
  before: ReadMark | undefined,
): Promise<boolean> {
  const mark = await laneMark(storage, owner, message);
  if (!mark) return false;
  if (message.message_id === undefined) return mark.message_id !== before?.message_id;
  const shown = await storage.getMessage(owner, message.message_id);
  if (!shown) return true; // deleted meanwhile: nothing left to push
  return mark.ts > shown.ts || (mark.ts === shown.ts && mark.message_id >= shown.message_id);
}

async function pushToDevices(
  parts: PushParts,
  owner: Owner,
  message: PushMessage,
  offer: AskOffer | undefined,
): Promise<void> {
  for (const { device, sender } of pushTargets(await parts.storage.listDevices(owner), parts.push)) {
    const key = targetKey(sender, device);
    // A target that failed lately is not tried again until its rest is over.
    if (parts.health.resting(key)) {
      parts.log.info(
        `push via ${sender.name} to device ${device.device_id} of ${owner} skipped: its target failed lately`,
      );
      continue;
    }
    void withActions(parts, owner, { device, key }, message, offer).then((sent) =>
      pushWithRetry(parts, owner, { device, sender, key }, sent),
    );
  }
}

/**
 * The push with its buttons for this target, when it is an ask's and the storage keeps action
 * tokens; without buttons when minting fails (the push still opens the app).
 */
async function withActions(
  parts: PushParts,
  owner: Owner,
  target: { device: Device; key: string },
  message: PushMessage,
  offer: AskOffer | undefined,
): Promise<PushMessage> {
  const store = parts.storage.actionTokens;
  if (!offer || !store || message.picker_id === undefined || offer.options.length === 0) return message;
  try {
    const bound = {
      owner,
      picker_id: message.picker_id,
      device_id: target.device.device_id,
      target: target.key,
      base: parts.publicUrls.of(owner),
    };
    await purgeExpired(parts);
    return { ...message, actions: await mintActions(store, bound, offer) };
  } catch (error) {
    parts.log.warn(`push: minting the action tokens of device ${target.device.device_id} failed`, error);
    return message;
  }
}

async function pushWithRetry(
  parts: PushParts,
  owner: Owner,
  target: { device: Device; sender: PushSender; key: string },
  message: PushMessage,
): Promise<void> {
  const { device, sender, key } = target;
  const { attempts, backoffMs } = parts.pushRetry;
  const receipt = await receiptOf(parts, owner, message, { device_id: device.device_id, key });
  for (let attempt = 1; ; attempt++) {
    try {
      await sender.send(owner, device, message);
      parts.health.clear(key);
      parts.sent?.add(owner, message, device.device_id, key);
      return;
    } catch (error) {
      const permanent = Boolean((error as { permanent?: boolean }).permanent);
      if (permanent || attempt > attempts) {
        if (receipt !== undefined)
          await settleUnsent(parts.storage.actionTokens!, receipt).catch((e) =>
            parts.log.warn("push: settling the receipt of a push that failed", e),
          );
        parts.log.warn(
          `push via ${sender.name} to device ${device.device_id} of ${owner} failed${permanent ? " permanently" : ` after ${attempt} attempts`}`,
          error,
        );
        const gone = (error as { gone?: boolean }).gone === true;
        if (parts.health.failed(key) || gone) {
          if (!gone)
            parts.log.warn(
              `push via ${sender.name}: dropping the target of device ${device.device_id}, which keeps failing`,
            );
          if (await forgetTarget(parts, owner, device, sender)) parts.health.clear(key);
        }
        return;
      }
      await sleep(parts.clock, backoffMs * 2 ** (attempt - 1));
    }
  }
}

/**
 * Keeps that an answer's push goes to this target, so that a read in any process clears it there
 * (docs/PROTOCOL.md §21.4); undefined without the `actionTokens` capability or when storing fails.
 */
async function receiptOf(
  parts: PushParts,
  owner: Owner,
  message: PushMessage,
  target: { device_id: string; key: string },
): Promise<string | undefined> {
  const store = parts.storage.actionTokens;
  if (!store || !isReadable(message) || message.clear) return undefined;
  try {
    await purgeExpired(parts);
    return await writeReceipt(store, owner, message, target, parts.now());
  } catch (error) {
    parts.log.warn(`push: storing the receipt of device ${target.device_id} failed; a read will not clear it`, error);
    return undefined;
  }
}

/** Forgets expired action tokens and receipts, at most once every {@link PURGE_EVERY_MS}. */
async function purgeExpired(parts: PushParts): Promise<void> {
  if (parts.now() - parts.purged <= PURGE_EVERY_MS) return;
  parts.purged = parts.now();
  await parts.storage.actionTokens?.deleteExpiredActionTokens(parts.now());
}

/** The target is gone or keeps failing: drop it from the stored device, unless a newer one replaced it. */
async function forgetTarget(parts: AwayPushParts, owner: Owner, pushed: Device, sender: PushSender): Promise<boolean> {
  if (!sender.forget) return false;
  const forget = sender.forget.bind(sender);
  try {
    // Decided on the record as it is when the write's turn comes, so a newer target stays and a
    // device no longer stored is not written back.
    await changeDevice(parts.storage, owner, pushed.device_id, (stored) => forget(stored, pushed));
    return true;
  } catch (error) {
    parts.log.warn(`push via ${sender.name}: could not drop the gone target of device ${pushed.device_id}`, error);
    return false;
  }
}
