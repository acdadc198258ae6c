/**
 * The request dispatcher: one handler per client frame type, after `hello`.
 * @module
 */
import { channelPayload } from "../requests/channel-rules.js";
import { createChannel, deleteChannel, listChannels, setDefault, updateChannel, type Requester } from "../requests/channel-requests.js";
import { GatewayError } from "../errors.js";
import type { ClientFrame } from "../protocol/frames.js";
import type { Hub, HubSession } from "../outbox/hub.js";
import type { Owner } from "../ids.js";
import type { Uploads } from "../requests/media-transfer.js";
import type { OutgoingFrame } from "../contracts/bus.js";
import type { ServerFrame } from "../protocol/protocol.js";
import type { Device } from "../contracts/records.js";
import { deleteMessages, sendMessage } from "../requests/message-requests.js";
import { LIMITS } from "../protocol/protocol.js";
import { fitHistory } from "../requests/history-page.js";
import { pushTargetError } from "../outbox/push-targets.js";
import { historyItem } from "../protocol/message-payloads.js";
import { selectPicker } from "../asks/ask-answers.js";
import { completeCommand } from "../asks/completions.js";

const SYNC_PAGE = 500;

/** What a request handler needs of the connection that sent the request (a `DeviceSession`). */
export interface RequestSession extends HubSession {
  readonly owner: Owner;
  readonly device: Device;
  readonly uploads: Uploads;
  /** Send a frame to this connection only (a response). */
  send(frame: ServerFrame, requestId?: string): void;
  /** Wait until the socket's buffer is below the soft limit (long replies, media pulls); false once the connection ended. */
  drained(): Promise<boolean>;
  /** Replay stored frames while holding back live stored frames (sync). */
  replay(run: () => Promise<number>): Promise<void>;
  /** Send a stored frame replayed by sync, shaped for this device. */
  deliverReplay(frame: OutgoingFrame): void;
  /** The device record changed (fcm.register). */
  updateDevice(device: Device): void;
}

/** A page size from a request: default, clamp to the maximum, `unsupported` below 1. */
function pageLimit(limit: number | undefined, fallback: number, max: number, field = "limit"): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1) throw new GatewayError("unsupported", `field "${field}": use an integer of at least 1`);
  return Math.min(limit, max);
}

/** Handle one validated frame of a connection that completed hello. */
export async function handleRequest(hub: Hub, session: RequestSession, frame: ClientFrame): Promise<void> {
  const owner = session.owner;
  const requester: Requester = { session, requestId: frame.id };
  switch (frame.type) {
    case "ping":
      session.send({ type: "pong", payload: { ts: frame.payload.ts ?? hub.now() } }, frame.id);
      return;

    case "channel.list": {
      const channels = await listChannels(hub, owner);
      session.send({ type: "channel.list", payload: { channels: channels.map(channelPayload) } }, frame.id);
      return;
    }
    case "channel.set_default":
      await setDefault(hub, owner, frame.payload.chat_id, requester);
      return;
    case "channel.create":
      await createChannel(hub, owner, frame.payload, requester);
      return;
    case "channel.update":
      await updateChannel(hub, owner, frame.payload, requester);
      return;
    case "channel.delete":
      await deleteChannel(hub, owner, frame.payload.chat_id, requester);
      return;

    case "message.send":
      await sendMessage(hub, owner, frame.payload, requester);
      return;
    case "message.delete":
      await deleteMessages(hub, owner, frame.payload, requester);
      return;

    case "history": {
      const p = frame.payload;
      const limit = pageLimit(p.limit, LIMITS.historyDefault, LIMITS.historyMax);
      const lane = await hub.resolveLane(owner, p.chat_id, p.thread_id);
      const before = p.before_message_id ?? undefined;
      const page = await hub.storage.history(owner, { chat_id: lane.chat_id, thread_id: lane.thread_id, before, limit });
      if (!page) throw new GatewayError("not_found", `unknown before_message_id "${before}" in this lane`);
      const fitted = fitHistory(page.messages.map(historyItem), hub.options.historyMaxBytes);
      session.send(
        {
          type: "history",
          payload: {
            chat_id: lane.chat_id,
            thread_id: lane.thread_id,
            messages: fitted.items,
            has_more: page.has_more || fitted.cut,
            oldest_message_id: fitted.items[0]?.message_id ?? null,
          },
        },
        frame.id,
      );
      return;
    }

    case "search": {
      const p = frame.payload;
      const limit = pageLimit(p.limit, LIMITS.searchDefault, hub.options.searchMax);
      let chat_id: string | undefined;
      let thread_id: string | undefined;
      if (p.scope === "chat") {
        if (!p.chat_id) throw new GatewayError("unsupported", `field "chat_id": scope "chat" needs a chat_id`);
        const lane = await hub.resolveLane(owner, p.chat_id, p.thread_id);
        chat_id = lane.chat_id;
        thread_id = lane.thread_id ?? undefined;
      }
      const query = p.query.trim();
      const hits = query === "" ? [] : await hub.storage.search(owner, { query, scope: p.scope, chat_id, thread_id, limit });
      session.send({ type: "search.results", payload: { query: p.query, scope: p.scope, hits } }, frame.id);
      return;
    }

    case "sync": {
      const cursor = frame.payload.cursor;
      if (cursor < 0) throw new GatewayError("unsupported", `field "cursor": use an integer of at least 0`);
      await session.replay(async () => {
        const bounds = await hub.storage.outboxBounds(owner);
        // A cursor from before what is kept, or one this gateway never gave: the client refetches history.
        const reset = cursor > bounds.last || (cursor < bounds.last && cursor + 1 < bounds.first);
        if (!reset) {
          let after = cursor;
          while (after < bounds.last) {
            const entries = await hub.storage.readOutbox(owner, after, SYNC_PAGE);
            if (entries.length === 0) break;
            for (const entry of entries) {
              if (entry.seq > bounds.last) break;
              session.deliverReplay({ type: entry.type, payload: entry.payload, seq: entry.seq });
              after = entry.seq;
            }
            if (!(await session.drained())) break;
          }
        }
        session.send({ type: "sync.done", payload: reset ? { cursor: bounds.last, reset: true } : { cursor: bounds.last } }, frame.id);
        return bounds.last;
      });
      return;
    }

    case "picker.select":
      await selectPicker(hub, session, frame.payload, frame.id);
      return;
    case "commands.complete": {
      const completions = await completeCommand(hub, owner, frame.payload);
      session.send({ type: "commands.complete", payload: { text: frame.payload.text, completions } }, frame.id);
      return;
    }

    case "commands.catalog":
      session.send({ type: "commands.catalog", payload: { commands: await hub.commands.catalog() } }, frame.id);
      return;

    case "fcm.register": {
      const invalid = pushTargetError("fcm.register", frame.payload);
      if (invalid) throw invalid;
      const device = { ...session.device };
      if (frame.payload.fcm_token !== undefined) device.fcm_token = frame.payload.fcm_token;
      if (frame.payload.ntfy_topic !== undefined) device.ntfy_topic = frame.payload.ntfy_topic;
      await hub.storage.putDevice(owner, device);
      session.updateDevice(device);
      return;
    }

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
