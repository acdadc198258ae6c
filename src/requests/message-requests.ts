/**
 * `message.send` (echo, idempotency, auto-threading, slash commands, the turn) and
 * `message.delete` (docs/PROTOCOL.md §4).
 * @module
 */
import { createdPayload } from "../channels/channel-rules.js";
import type { ChannelServices, Requester } from "../channels/channel-operations.js";
import { mintThread, retitleThread } from "../channels/auto-thread.js";
import { parseCommand } from "../turn/commands.js";
import { GatewayError } from "../protocol/errors.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import type { ResolveLane } from "../channels/channel-directory.js";
import { attachedMedia } from "../media/media-attachment.js";
import { newId } from "../support/id-generator.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneScheduler } from "../lanes/scheduler.js";
import type { Channel, StoredMessage } from "../contracts/records.js";
import type { StoredFrame } from "../protocol/protocol.js";
import type { Lane } from "../contracts/storage.js";
import { messagePayload } from "../outbox/message-payloads.js";
import { publishQueue } from "../lanes/queue.js";
import type { RunServices } from "../lanes/run.js";
import { actOnIntake, intakeOf, markIntake } from "../lanes/intake.js";
import { respondEcho } from "./stored-echo.js";

/** What the message handlers read and write through: the lane's turns run as answers, and may ask. */
export interface MessageServices extends RunServices, ChannelServices {
  readonly resolveLane: ResolveLane;
  readonly lanes: LaneScheduler;
}

/** Sends in flight by idempotency key, so a retry racing its original waits for it. */
const pendingSends = new WeakMap<MessageServices, Map<string, Promise<StoredMessage>>>();

function pendingOf(services: MessageServices): Map<string, Promise<StoredMessage>> {
  let map = pendingSends.get(services);
  if (!map) {
    map = new Map();
    pendingSends.set(services, map);
  }
  return map;
}

/** Handle `message.send`: store and echo the user message, then queue its turn. */
export async function sendMessage(
  services: MessageServices,
  owner: Owner,
  payload: ClientPayloads["message.send"],
  requester: Requester,
): Promise<StoredMessage> {
  const resolved = await services.resolveLane(owner, payload.chat_id, payload.thread_id);
  if (resolved.channel.automation || resolved.thread?.automation) {
    throw new GatewayError("unsupported", "this is an automation channel: it is read-only");
  }
  const text = payload.text ?? "";
  const refs = payload.media_refs ?? [];
  // Empty means "": whitespace is text a person chose to send (docs/PROTOCOL.md §4.1).
  if (text === "" && refs.length === 0)
    throw new GatewayError("unsupported", `field "text": empty text needs media_refs`);

  const key = payload.client_msg_id;
  if (key !== undefined) {
    const pendingKey = `${owner}\u0000${resolved.chat_id}\u0000${key}`;
    const pendings = pendingOf(services);
    // Wait for the send of this key in flight here, if any; one that failed leaves the next to try.
    for (let pending = pendings.get(pendingKey); pending; pending = pendings.get(pendingKey)) {
      const earlier = await pending.catch(() => undefined);
      if (earlier) {
        await respondEcho(services.storage, owner, earlier, key, requester);
        return earlier;
      }
    }
    // Registered before the look-up awaits, so retries arriving meanwhile wait for this one.
    const work = (async () => {
      const earlier = await services.storage.findByClientMsgId(owner, resolved.chat_id, key);
      if (earlier) {
        await respondEcho(services.storage, owner, earlier, key, requester);
        return earlier;
      }
      return storeAndStart(services, owner, payload, resolved, text, refs, requester);
    })().catch(async (error) => {
      // Another process may have stored the same key first (a storage with a unique index rejects
      // the second write): answer with that message, as for any retry.
      const stored = await services.storage.findByClientMsgId(owner, resolved.chat_id, key).catch(() => undefined);
      if (!stored) throw error;
      await respondEcho(services.storage, owner, stored, key, requester);
      return stored;
    });
    pendings.set(pendingKey, work);
    // Before any waiter resumes, so none waits for a settled send again.
    void work.then(
      () => pendings.get(pendingKey) === work && pendings.delete(pendingKey),
      () => pendings.get(pendingKey) === work && pendings.delete(pendingKey),
    );
    return await work;
  }
  return storeAndStart(services, owner, payload, resolved, text, refs, requester);
}

async function storeAndStart(
  services: MessageServices,
  owner: Owner,
  payload: ClientPayloads["message.send"],
  resolved: Lane & { channel: Channel },
  text: string,
  refs: string[],
  requester: Requester,
): Promise<StoredMessage> {
  const media = await attachedMedia(services.storage, owner, refs);
  const command = parseCommand(text);
  const intake = await intakeOf(services, owner, command, payload.when_busy);

  let lane: Lane = { chat_id: resolved.chat_id, thread_id: resolved.thread_id };
  const frames: StoredFrame[] = [];
  const channels: Channel[] = [];
  // Auto-threading: only in a flat lane, with non-blank text that is not a slash command.
  const minted =
    payload.auto_thread === true && lane.thread_id === null && text.trim() !== "" && !command
      ? await mintThread(services, owner, lane, text)
      : undefined;
  if (minted) {
    channels.push(minted);
    frames.push({ type: "channel.created", payload: createdPayload(minted, true) });
    lane = { chat_id: lane.chat_id, thread_id: minted.chat_id };
  }
  const message: StoredMessage = {
    message_id: newId("m"),
    role: "user",
    text,
    reasoning: "",
    ts: services.now(),
    media,
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
  };
  if (payload.reply_to) message.reply_to = payload.reply_to;
  if (payload.client_msg_id !== undefined) {
    message.client_msg_id = payload.client_msg_id;
    // Where its echo will be found again for a retry (docs/PROTOCOL.md §4.1).
    message.echo_after = (await services.storage.outboxBounds(owner)).last;
  }
  const steer = markIntake(services, owner, lane, message, intake);
  frames.push({ type: "message", payload: messagePayload(message) });
  // Refused, with nothing stored, when a concurrent channel.delete took the chat or thread first.
  const requireChannels = resolved.thread_id === null ? [resolved.chat_id] : [resolved.chat_id, resolved.thread_id];
  const stored = await services.store(
    owner,
    { channels, messages: [message], requireChannels },
    frames,
    requester && { ...requester, frameIndex: frames.length - 1 },
  );
  if (!stored.length) throw new GatewayError("not_found", `unknown chat_id "${payload.chat_id}"`);

  if (minted) void retitleThread(services, owner, minted, text);
  const deviceId = (requester?.session as { device?: { device_id: string } } | undefined)?.device?.device_id ?? "";
  await actOnIntake(services, owner, lane, message, intake, steer, deviceId);
  return message;
}

/** Handle `message.delete`: every id must be in the lane, else nothing is deleted. */
export async function deleteMessages(
  services: MessageServices,
  owner: Owner,
  payload: ClientPayloads["message.delete"],
  requester: Requester,
): Promise<void> {
  const lane = await services.resolveLane(owner, payload.chat_id, payload.thread_id);
  if (payload.message_ids.length === 0)
    throw new GatewayError("unsupported", `field "message_ids": list at least one id`);
  const ids = [...new Set(payload.message_ids)];
  let waiting = false;
  for (const id of ids) {
    const message = await services.storage.getMessage(owner, id);
    if (!message || message.chat_id !== lane.chat_id || message.thread_id !== lane.thread_id) {
      throw new GatewayError("not_found", `unknown message_id "${id}" in this lane`);
    }
    waiting ||= message.waiting === true;
  }
  // Before the delete is stored: from here on the turn sends and stores nothing of its answer.
  services.lanes.dropAnswer(owner, lane, ids);
  await services.store(
    owner,
    { deleteMessages: ids },
    [{ type: "message.deleted", payload: { chat_id: lane.chat_id, thread_id: lane.thread_id, message_ids: ids } }],
    requester,
  );
  // A waiting message deleted leaves the lane's queue: its turn never runs (docs/PROTOCOL.md §14.4).
  if (waiting) void publishQueue(services, owner, { chat_id: lane.chat_id, thread_id: lane.thread_id });
}
