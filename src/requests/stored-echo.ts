/**
 * The echo of a retried `message.send` (docs/PROTOCOL.md §4.1): the stored `message` frame as it
 * was, with its `seq`, so a client that lost the first answer applies the same frame once. Found
 * among the owner's `message` frames from the outbox position the message noted when it was
 * stored (`echo_after`), through the storage's index of frames by type.
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { StoredMessage } from "../contracts/records.js";
import type { Storage } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import { messagePayload } from "../outbox/message-payloads.js";
import type { Requester } from "../channels/channel-operations.js";

/** Frames per page, and pages at most: other devices' sends may land between the note and the echo. */
const PAGE = 64;
const PAGES = 4;

async function storedEcho(storage: Storage, owner: Owner, message: StoredMessage): Promise<OutgoingFrame | undefined> {
  let after = message.echo_after;
  if (after === undefined) return undefined;
  for (let page = 0; page < PAGES; page++) {
    const entries = await storage.readOutbox(owner, after, PAGE, ["message"]);
    for (const e of entries)
      if (e.type === "message" && e.payload.message_id === message.message_id)
        return { type: "message", payload: e.payload, seq: e.seq };
    if (entries.length === 0) return undefined;
    after = entries[entries.length - 1]!.seq;
  }
  return undefined;
}

/** Answer a retried send with its stored echo; rebuilt without `seq` only when the frame is not found. */
export async function respondEcho(
  storage: Storage,
  owner: Owner,
  message: StoredMessage,
  key: string,
  requester: Requester,
): Promise<void> {
  if (!requester) return;
  const frame = (await storedEcho(storage, owner, message).catch(() => undefined)) ?? {
    type: "message",
    payload: messagePayload(message, key),
  };
  requester.session.respond(frame, requester.requestId);
}
