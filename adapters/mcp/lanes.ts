/**
 * How the MCP tools name a conversation (docs/PROTOCOL.md §20.2): a `lane` written as the
 * `/api/chat` ids of docs/PROTOCOL.md §19.4, `chat_id` or `chat_id/thread_id`.
 * @module
 */
import { ToolError } from "./results.js";
import type { McpGatewayLink } from "./link.js";

/** A lane as frames carry it. */
export interface Lane {
  chat_id: string;
  thread_id: string | null;
}

/** A channel or thread as `channel.list` lists it. */
export interface ListedChannel {
  chat_id: string;
  name: string;
  kind: string;
  parent_chat_id: string | null;
  is_default: boolean;
  archived: boolean;
  automation?: boolean;
  unread?: number;
}

/** The lane's written name. */
export function laneName(lane: Lane): string {
  return lane.thread_id ? `${lane.chat_id}/${lane.thread_id}` : lane.chat_id;
}

/** The lane of a listed channel: its flat lane, or the thread it is. */
export function laneOfChannel(channel: ListedChannel): Lane {
  return channel.kind === "thread" && channel.parent_chat_id
    ? { chat_id: channel.parent_chat_id, thread_id: channel.chat_id }
    : { chat_id: channel.chat_id, thread_id: null };
}

/** The owner's channels and threads. */
export async function listChannels(link: McpGatewayLink): Promise<ListedChannel[]> {
  const list = await link.request("channel.list", {});
  return (list.channels ?? []) as ListedChannel[];
}

/**
 * The lane a written name means. A bare `chat_id` of a thread is that thread's lane; a name that
 * names nothing of the owner's is `not_found` (another owner's lane included).
 */
export async function resolveLane(link: McpGatewayLink, name: string): Promise<Lane> {
  const parts = name.trim().split("/");
  if (parts.length > 2 || parts.some((p) => p === ""))
    throw new ToolError("not_found", `no conversation "${name.slice(0, 100)}": write chat_id or chat_id/thread_id`);
  const channels = await listChannels(link);
  const [chatId, threadId] = parts;
  const found = channels.find((c) =>
    threadId === undefined ? c.chat_id === chatId : c.chat_id === threadId && c.parent_chat_id === chatId,
  );
  if (!found) throw new ToolError("not_found", `no conversation "${name.slice(0, 100)}"`);
  return laneOfChannel(found);
}
