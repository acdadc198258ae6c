/**
 * Reading a lane back: `history` pages and `search` (docs/PROTOCOL.md §5).
 * @module
 */
import type { Storage } from "../contracts/storage.js";
import { GatewayError } from "../protocol/errors.js";
import type { ChatId, Owner } from "../protocol/ids.js";
import type { ResolvedOptions } from "../options/options.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import { historyItem } from "../outbox/message-payloads.js";
import { LIMITS } from "../protocol/limits.js";
import type { ServerFrame } from "../protocol/protocol.js";
import type { ResolveLane } from "../channels/channel-directory.js";
import { fitHistory } from "./history-page.js";

/** What the reads need. */
export interface ReadServices {
  readonly storage: Storage;
  readonly resolveLane: ResolveLane;
  readonly options: Pick<ResolvedOptions, "historyMaxBytes" | "searchMax">;
}

/** A page size from a request: default, clamp to the maximum, `unsupported` below 1. */
function pageLimit(limit: number | undefined, fallback: number, max: number, field = "limit"): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1)
    throw new GatewayError("unsupported", `field "${field}": use an integer of at least 1`);
  return Math.min(limit, max);
}

/** The `history` response: a page of the lane, newest last, cut to `historyMaxBytes`. */
export async function history(
  services: ReadServices,
  owner: Owner,
  p: ClientPayloads["history"],
): Promise<ServerFrame> {
  const limit = pageLimit(p.limit, LIMITS.historyDefault, LIMITS.historyMax);
  const lane = await services.resolveLane(owner, p.chat_id, p.thread_id);
  const before = p.before_message_id ?? undefined;
  const page = await services.storage.history(owner, {
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
    before,
    limit,
  });
  if (!page) throw new GatewayError("not_found", `unknown before_message_id "${before}" in this lane`);
  const fitted = fitHistory(page.messages.map(historyItem), services.options.historyMaxBytes);
  return {
    type: "history",
    payload: {
      chat_id: lane.chat_id,
      thread_id: lane.thread_id,
      messages: fitted.items,
      has_more: page.has_more || fitted.cut,
      oldest_message_id: fitted.items[0]?.message_id ?? null,
    },
  };
}

/** The `search.results` response; an empty query finds nothing. */
export async function search(services: ReadServices, owner: Owner, p: ClientPayloads["search"]): Promise<ServerFrame> {
  const limit = pageLimit(p.limit, LIMITS.searchDefault, services.options.searchMax);
  let chat_id: ChatId | undefined;
  let thread_id: ChatId | undefined;
  if (p.scope === "chat") {
    if (!p.chat_id) throw new GatewayError("unsupported", `field "chat_id": scope "chat" needs a chat_id`);
    const lane = await services.resolveLane(owner, p.chat_id, p.thread_id);
    chat_id = lane.chat_id;
    thread_id = lane.thread_id ?? undefined;
  }
  const query = p.query.trim();
  const hits =
    query === "" ? [] : await services.storage.search(owner, { query, scope: p.scope, chat_id, thread_id, limit });
  return { type: "search.results", payload: { query: p.query, scope: p.scope, hits } };
}
