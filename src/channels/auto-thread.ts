/**
 * Auto-threading (docs/PROTOCOL.md §4.1, `auto_thread`): a send in a flat lane opens a thread of its
 * own, titled from its text at once and by the runtime once it offers better.
 * @module
 */
import type { Logger } from "../contracts/logger.js";
import type { Channel } from "../contracts/records.js";
import type { AgentRuntime } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import { buildChannel, type ChannelServices } from "./channel-operations.js";
import { channelPayload, deriveTitle } from "./channel-rules.js";

/** What retitling a thread uses: the channels, and the runtime that may offer a title. */
export interface AutoThreadServices extends ChannelServices {
  readonly runtime: Pick<AgentRuntime, "generateTitle">;
  readonly log: Logger;
}

/** Ask the runtime for a better auto-thread title; keep the derived one when it has none. */
export async function retitleThread(
  services: AutoThreadServices,
  owner: Owner,
  thread: Channel,
  text: string,
): Promise<void> {
  if (!services.runtime.generateTitle) return;
  try {
    const title = (await services.runtime.generateTitle(text, AbortSignal.timeout(30_000)))
      .trim()
      .replace(/\s+/g, " ")
      .slice(0, 100);
    if (!title) return;
    const current = await services.storage.getChannel(owner, thread.chat_id);
    if (!current) return;
    const next: Channel = { ...current, name: title };
    // Expecting the thread as read: a rename or deletion meanwhile wins over the generated title.
    await services.store(
      owner,
      { channels: [next], expectChannels: [{ chat_id: current.chat_id, channel: current }] },
      [{ type: "channel.renamed", payload: channelPayload(next) }],
    );
  } catch (error) {
    services.log.warn("generating a thread title failed; the derived title stays", error);
  }
}

/** A new thread for an auto-threaded send, titled from its text until the runtime offers better. */
export function mintThread(services: ChannelServices, owner: Owner, lane: Lane, text: string): Promise<Channel> {
  return buildChannel(services, owner, {
    name: deriveTitle(text) || "Thread",
    kind: "thread",
    parent_chat_id: lane.chat_id,
  });
}
