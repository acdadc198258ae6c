// Sessions of the ACP bridge (docs/PROTOCOL.md §20): a new session is a new thread in the
// bridge's channel, loading one replays its lane's history, and the list is the channel's threads.
import { basename } from "node:path";
import { RequestError, type AgentContext, type SessionInfo } from "@agentclientprotocol/sdk";
import { ClientError, type ChannelListPayload, type GatewayClient } from "chat-gateway/client";
import { laneOf, sessionIdOf, type Lane } from "./lanes.js";
import { replayUpdates } from "./updates.js";

/** A channel as `channel.list` gives it. */
export type Channel = ChannelListPayload["channels"][number];

/** How many history messages a load replays at most (the newest ones). */
const REPLAY_LIMIT = 500;

/**
 * The channel the bridge's sessions live in: `--channel` by id or name (case ignored), else the
 * owner's current default. An unknown name is `not_found`.
 */
export async function resolveChannel(client: GatewayClient, wanted: string | undefined): Promise<Channel> {
  const { channels } = await client.request("channel.list", {});
  const roots = channels.filter((c) => c.kind !== "thread" && !c.archived);
  const found = wanted
    ? (roots.find((c) => c.chat_id === wanted) ?? roots.find((c) => c.name.toLowerCase() === wanted.toLowerCase()))
    : roots.find((c) => c.is_default);
  if (!found)
    throw new ClientError(
      "not_found",
      wanted ? `no channel named "${wanted}"` : "the gateway named no default channel",
    );
  return found;
}

/** `session/new`: a thread titled after the editor's folder. */
export async function newSession(client: GatewayClient, channel: Channel, cwd: string): Promise<Lane> {
  const name = `${basename(cwd) || "editor"} (editor)`.slice(0, 100);
  const thread = await client.request("channel.create", { name, kind: "thread", parent_chat_id: channel.chat_id });
  return { chat_id: channel.chat_id, thread_id: thread.chat_id };
}

/** `session/load`: the lane's history (oldest first) as `session/update`s, sent before the answer. */
export async function loadSession(client: GatewayClient, editor: AgentContext, sessionId: string): Promise<Lane> {
  const lane = laneOf(sessionId);
  const pages = [];
  let count = 0;
  try {
    for await (const page of client.historyPager(lane, { limit: 100 })) {
      pages.unshift(page);
      count += page.length;
      if (count >= REPLAY_LIMIT) break;
    }
  } catch (error) {
    if ((error as { code?: string }).code === "not_found") throw RequestError.sessionNotFound(sessionId);
    throw error;
  }
  for (const item of pages.flat()) {
    if (item.command) continue;
    for (const update of replayUpdates(item)) await editor.notify("session/update", { sessionId, update });
  }
  return lane;
}

/** `session/list`: the threads of the bridge's channel, newest names as the gateway lists them. */
export async function listSessions(client: GatewayClient, channel: Channel, cwd: string): Promise<SessionInfo[]> {
  const { channels } = await client.request("channel.list", {});
  return channels
    .filter((c) => c.kind === "thread" && c.parent_chat_id === channel.chat_id && !c.archived)
    .map((c) => ({ sessionId: sessionIdOf({ chat_id: channel.chat_id, thread_id: c.chat_id }), cwd, title: c.name }));
}
