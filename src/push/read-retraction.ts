/**
 * Retraction of a message's push once it is read (docs/PROTOCOL.md §21.4): when a device reads
 * an answer that was pushed, every other target that was sent its push gets one clearing push,
 * and the reading device's own target none. Whom it was pushed to is kept as receipts in the
 * storage's `actionTokens` capability, written before each push goes out, so the process where
 * the read lands clears it whichever process pushed; the capability's single use makes each
 * receipt cleared once, however many reads land at once on however many processes.
 * @module
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { ActionTokenRecord, ActionTokenStore } from "../contracts/action-tokens.js";
import type { Logger } from "../contracts/logger.js";
import type { PushMessage, PushSender } from "../contracts/push.js";
import type { Device } from "../contracts/records.js";
import type { ReadMark, Storage } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import { actionTokenHash } from "./action-tokens.js";
import { laneUrl, type PublicUrls } from "./public-url.js";
import { pushTargets, targetKey } from "./push-fan-out.js";

/** How long a message's push can be cleared by a read (ms): a week. */
export const RECEIPT_TTL_MS = 7 * 24 * 3_600_000;

/** The outcome of a receipt whose push never went out: nothing to clear. */
const UNSENT = "unsent";

/** The title of an answer's push (docs/PROTOCOL.md §15), which its clear keeps. */
const ANSWER_TITLE = "New answer";

/**
 * The `picker_id` under which a lane's receipts are kept: with a ":", which no ask id has, so the
 * act route can never name it, and no token exists for a receipt's hash (docs/PROTOCOL.md §21.3).
 */
export function receiptLane(chatId: string, threadId: string | null | undefined): string {
  return `read:${JSON.stringify([chatId, threadId ?? null])}`;
}

/** Whether a push is an answer's, which a read clears. */
export function isReadable(message: PushMessage): boolean {
  return message.kind === "message" && message.message_id !== undefined && message.chat_id !== undefined;
}

/**
 * Stores that the answer's push goes to this target, before it is sent (so a read that lands
 * while it is on its way finds it); resolves with the receipt's hash to settle when it fails.
 */
export async function writeReceipt(
  store: ActionTokenStore,
  owner: Owner,
  message: PushMessage,
  target: { device_id: string; key: string },
  now: number,
): Promise<string> {
  const record: ActionTokenRecord = {
    // The hash of bytes nobody keeps: no token redeems a receipt.
    hash: actionTokenHash(randomBytes(32).toString("base64url")),
    owner,
    picker_id: receiptLane(message.chat_id!, message.thread_id),
    option_id: message.message_id!,
    device_id: target.device_id,
    target: target.key,
    expires_at: now + RECEIPT_TTL_MS,
  };
  await store.putActionTokens([record]);
  return record.hash;
}

/** The push never reached its target: a read later clears nothing there. */
export async function settleUnsent(store: ActionTokenStore, hash: string): Promise<void> {
  await store.settleActionToken(hash, UNSENT);
}

/** Clears the pushes a read covers on the owner's other targets; never rejects. */
export type RetractRead = (owner: Owner, readerId: string, mark: ReadMark) => void;

/** What read retraction reads and sends through. */
export interface ReadRetractionParts {
  push: PushSender[];
  storage: Storage;
  log: Logger;
  publicUrls: PublicUrls;
}

/** The read retraction of a gateway (docs/PROTOCOL.md §21.4). */
export function readRetraction(parts: ReadRetractionParts): RetractRead {
  return (owner, readerId, mark) => {
    if (parts.push.length === 0 || !parts.storage.actionTokens) return;
    void retract(parts, owner, readerId, mark).catch((error) =>
      parts.log.warn("push: clearing a read message's push failed", error),
    );
  };
}

async function retract(parts: ReadRetractionParts, owner: Owner, readerId: string, mark: ReadMark): Promise<void> {
  const store = parts.storage.actionTokens!;
  const open = (await store.actionTokensOf(owner, receiptLane(mark.chat_id, mark.thread_id))).filter(
    (r) => r.outcome === undefined,
  );
  if (open.length === 0) return;
  const covered = await coveredBy(parts.storage, owner, mark, new Set(open.map((r) => r.option_id)));
  const devices = await parts.storage.listDevices(owner);
  const targets = new Map(pushTargets(devices, parts.push).map((t) => [targetKey(t.sender, t.device), t]));
  const reader = devices.find((d) => d.device_id === readerId);
  const readerKey = [...targets].find(([, t]) => t.device.device_id === readerId)?.[0];
  const claim = `read ${randomUUID()}`;
  for (const receipt of open) {
    if (!covered.has(receipt.option_id)) continue;
    // Single use: of every read that covers it, in any process, one clears it.
    if ((await store.settleActionToken(receipt.hash, claim)) !== claim) continue;
    // The reading device already shows it read; only the other targets are told.
    if (receipt.device_id === readerId || receipt.target === readerKey) continue;
    const target = targets.get(receipt.target);
    if (!target) continue;
    target.sender
      .send(owner, target.device, clearing(parts, owner, receipt, mark, reader))
      .catch((error) =>
        parts.log.warn(`push via ${target.sender.name}: clearing on device ${target.device.device_id} failed`, error),
      );
  }
}

/** The message ids the read covers: its lane's messages at or before the mark by `(ts, message_id)`. */
async function coveredBy(storage: Storage, owner: Owner, mark: ReadMark, ids: Set<string>): Promise<Set<string>> {
  const covered = new Set<string>();
  for (const id of ids) {
    if (id === mark.message_id) covered.add(id);
    else {
      const message = await storage.getMessage(owner, id);
      if (!message || message.ts < mark.ts || (message.ts === mark.ts && message.message_id <= mark.message_id))
        covered.add(id);
    }
  }
  return covered;
}

/** The clearing push: the answer's tag, what happened ("Read on Laptop"). */
function clearing(
  parts: ReadRetractionParts,
  owner: Owner,
  receipt: ActionTokenRecord,
  mark: ReadMark,
  reader: Device | undefined,
): PushMessage {
  const message: PushMessage = {
    kind: "message",
    title: ANSWER_TITLE,
    body: `Read on ${reader?.device_name || "another device"}`,
    chat_id: mark.chat_id,
    thread_id: mark.thread_id ?? null,
    message_id: receipt.option_id,
    clear: true,
  };
  message.url = laneUrl(parts.publicUrls.of(owner), message);
  return message;
}
