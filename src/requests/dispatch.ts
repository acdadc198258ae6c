/**
 * The request dispatcher: one handler per client frame type, after `hello`.
 * @module
 */
import type { Device } from "../contracts/records.js";
import type { Storage } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import type { Subscriber } from "../outbox/fan-out.js";
import { nextSubscription, pushTargetError } from "../push/push-targets.js";
import { writeDevice } from "../storage/device-writes.js";
import { sync, type SyncTarget } from "../outbox/sync.js";
import type { ClientFrame, ClientPayloads } from "../protocol/client-frames.js";
import type { ServerPayloads } from "../protocol/server-frames.js";
import type { CommandRegistry } from "../turn/commands.js";
import { channelPayload } from "../channels/channel-rules.js";
import {
  createChannel,
  deleteChannel,
  listChannels,
  setDefault,
  updateChannel,
  type Requester,
} from "../channels/channel-operations.js";
import { history, search, type ReadServices } from "./lane-reads.js";
import type { Uploads } from "../media/media-transfer.js";
import { deleteMessages, sendMessage, type MessageServices } from "./message-requests.js";
import { selectPicker } from "../asks/ask-answers.js";
import { completeCommand } from "../asks/completions.js";
import { shareState } from "../lanes/shared-state.js";
import { stopTurn } from "../lanes/stop.js";
import { markRead, unreadByChannel, type ReadStateServices } from "./read-state.js";

/** What the handlers read and write through, together. */
export interface RequestServices extends MessageServices, ReadServices, ReadStateServices {
  readonly options: MessageServices["options"] & ReadServices["options"];
  readonly commands: CommandRegistry;
}

/** What a request handler needs of the connection that sent the request (a `DeviceSession`). */
export interface RequestSession extends Subscriber, SyncTarget {
  readonly owner: Owner;
  readonly device: Device;
  readonly uploads: Uploads;
  /** The device record changed (fcm.register). */
  updateDevice(device: Device): void;
}

/** Handle one validated frame of a connection that completed hello. */
export async function handleRequest(
  services: RequestServices,
  session: RequestSession,
  frame: ClientFrame,
): Promise<void> {
  const owner = session.owner;
  const requester: Requester = { session, requestId: frame.id };
  switch (frame.type) {
    case "ping":
      session.send({ type: "pong", payload: { ts: frame.payload.ts ?? services.now() } }, frame.id);
      return;

    case "channel.list":
      session.send({ type: "channel.list", payload: { channels: await channelEntries(services, owner) } }, frame.id);
      return;
    case "channel.set_default":
      await setDefault(services, owner, frame.payload.chat_id, requester);
      return;
    case "channel.create":
      await createChannel(services, owner, frame.payload, requester);
      return;
    case "channel.update":
      await updateChannel(services, owner, frame.payload, requester);
      return;
    case "channel.delete":
      await deleteChannel(services, owner, frame.payload.chat_id, requester);
      return;

    case "message.send":
      await sendMessage(services, owner, frame.payload, requester);
      return;
    case "message.delete":
      await deleteMessages(services, owner, frame.payload, requester);
      return;

    case "history":
      session.send(await history(services, owner, frame.payload), frame.id);
      return;
    case "search":
      session.send(await search(services, owner, frame.payload), frame.id);
      return;
    case "sync":
      await sync(services.storage, owner, frame.payload.cursor, frame.id, session);
      // A device that synced sees every running turn, open ask and queue too (docs/PROTOCOL.md §14.3).
      await shareState(services, owner, session);
      return;

    case "turn.stop":
    case "picker.select":
    case "commands.complete":
    case "commands.catalog":
      await handleTurnRequest(services, session, frame);
      return;

    case "read":
      await markRead(services, owner, session.device, frame.payload);
      return;
    case "fcm.register":
      await registerPushTarget(services.storage, session, frame.payload);
      return;

    case "media.upload.start":
      await session.uploads.start(frame.payload, frame.id);
      return;
    case "media.upload.end":
      await session.uploads.end(frame.payload, frame.id);
      return;
    case "media.pull":
      await session.uploads.pull(frame.payload.media_id, frame.id);
      return;
  }
}

type TurnRequest = "turn.stop" | "picker.select" | "commands.complete" | "commands.catalog";

/** The requests about a lane's turn: stopping it, answering its ask, and the slash commands. */
async function handleTurnRequest(
  services: RequestServices,
  session: RequestSession,
  frame: Extract<ClientFrame, { type: TurnRequest }>,
): Promise<void> {
  const owner = session.owner;
  switch (frame.type) {
    case "turn.stop": {
      const lane = await services.resolveLane(owner, frame.payload.chat_id, frame.payload.thread_id);
      const { message_id } = await stopTurn(services, owner, lane);
      session.send(
        { type: "turn.stopped", payload: { chat_id: lane.chat_id, thread_id: lane.thread_id, message_id } },
        frame.id,
      );
      return;
    }
    case "picker.select":
      await selectPicker(services, session, frame.payload, frame.id);
      return;
    case "commands.complete": {
      const completions = await completeCommand(services, owner, frame.payload);
      session.send({ type: "commands.complete", payload: { text: frame.payload.text, completions } }, frame.id);
      return;
    }
    case "commands.catalog":
      session.send({ type: "commands.catalog", payload: { commands: await services.commands.catalog() } }, frame.id);
      return;
  }
}

/** The entries of `channel.list`, each with its `unread` when the storage keeps read state (docs/PROTOCOL.md §15). */
async function channelEntries(
  services: RequestServices,
  owner: Owner,
): Promise<ServerPayloads["channel.list"]["channels"]> {
  const [channels, unread] = await Promise.all([
    listChannels(services, owner),
    unreadByChannel(services.storage, owner),
  ]);
  if (!services.storage.capabilities.readState) return channels.map(channelPayload);
  return channels.map((c) => ({ ...channelPayload(c), unread: unread.get(c.chat_id) ?? 0 }));
}

/** `fcm.register`: the device's push targets change; one the frame leaves out stays as it was. */
async function registerPushTarget(
  storage: Storage,
  session: RequestSession,
  payload: ClientPayloads["fcm.register"],
): Promise<void> {
  const invalid = pushTargetError("fcm.register", payload);
  if (invalid) throw invalid;
  // The target left out is taken as stored: another connection of this device may have just set it.
  const device = await writeDevice(storage, session.owner, session.device.device_id, (stored) => {
    const next: Device = { ...session.device };
    const fcm = payload.fcm_token ?? (stored ?? session.device).fcm_token;
    const ntfy = payload.ntfy_topic ?? (stored ?? session.device).ntfy_topic;
    const webpush = nextSubscription(payload.webpush, (stored ?? session.device).webpush);
    delete next.fcm_token;
    delete next.ntfy_topic;
    delete next.webpush;
    if (fcm !== undefined) next.fcm_token = fcm;
    if (ntfy !== undefined) next.ntfy_topic = ntfy;
    if (webpush !== undefined) next.webpush = webpush;
    return next;
  });
  session.updateDevice(device);
}
