/**
 * Which lane a `/api/chat` id names (docs/PROTOCOL.md §19): a `chat_id` (its flat lane, or the
 * thread it is), `chat_id/thread_id`, or a client's own id bound on first use to a new thread of
 * the default channel. The binding is the `client_msg_id` of the thread's first message, so it
 * survives restarts and every process reads it.
 * @module
 */
import { createHash } from "node:crypto";
import type { StoredMessage } from "chat-gateway";
import type { DoorLane } from "./conversation-lane.js";
import type { DoorTurn } from "./door-turn.js";

/** The channel every client-made chat id is bound in: the owner's channel of kind `default`. */
export const BINDING_CHANNEL = "default";

/** Where a chat id leads. */
export type ChatPlace =
  | { kind: "lane"; lane: DoorLane }
  | { kind: "bound"; lane: DoorLane; first: StoredMessage }
  | { kind: "new"; bindingKey: string };

interface ListedChannel {
  chat_id: string;
  kind: string;
  parent_chat_id: string | null;
}

/** The `client_msg_id` a chat id is bound by. */
export function bindingKey(id: string): string {
  return `chat:${createHash("sha256").update(id).digest("base64url").slice(0, 43)}`;
}

/** The key of one UI message of a chat: a retried request sends nothing twice. */
export function uiMessageKey(id: string, messageId: string): string {
  return `ui:${createHash("sha256").update(`${id}\u0000${messageId}`).digest("base64url").slice(0, 43)}`;
}

/** Finds the lane a chat id names, without making anything. */
export async function placeChat(turn: DoorTurn, id: string): Promise<ChatPlace> {
  const { session, ctx } = turn;
  const slash = id.indexOf("/");
  if (slash > 0) return { kind: "lane", lane: { chat_id: id.slice(0, slash), thread_id: id.slice(slash + 1) } };
  const list = await session.device.request("channel.list", {});
  const channel = ((list.payload.channels ?? []) as ListedChannel[]).find((c) => c.chat_id === id);
  if (channel)
    return {
      kind: "lane",
      lane:
        channel.kind === "thread" && channel.parent_chat_id
          ? { chat_id: channel.parent_chat_id, thread_id: channel.chat_id }
          : { chat_id: channel.chat_id, thread_id: null },
    };
  const key = bindingKey(id);
  const first = await ctx.storage.findByClientMsgId?.(session.owner, BINDING_CHANNEL, key);
  if (first) return { kind: "bound", lane: { chat_id: first.chat_id, thread_id: first.thread_id ?? null }, first };
  return { kind: "new", bindingKey: key };
}
