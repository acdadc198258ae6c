/**
 * The core's fallbacks that read through the required core: lanes come from `listChannels`,
 * messages from `history` pages. Each costs a scan; {@link StorageImplementation} states how much.
 * @module
 */
import type { ChatId, Owner } from "../protocol/ids.js";
import type { SearchHit, StoredMessage } from "../contracts/records.js";
import type { Lane, SearchQuery } from "../contracts/storage-change.js";
import type { StorageImplementation } from "../contracts/storage.js";
import { searchTerms } from "../protocol/search-text.js";
import { searchScan } from "./search-scan.js";

/** The largest page a storage must serve (docs/PROTOCOL.md §5: history is clamped to 200). */
const PAGE = 200;

type Core = Pick<StorageImplementation, "listChannels" | "history">;

/** Every lane of the owner's stored channels: each channel's flat lane and each thread. */
async function lanesOf(core: Core, owner: Owner): Promise<Lane[]> {
  return (await core.listChannels(owner)).map((c) =>
    c.parent_chat_id ? { chat_id: c.parent_chat_id, thread_id: c.chat_id } : { chat_id: c.chat_id, thread_id: null },
  );
}

/**
 * A lane's messages, newest page first. A page whose cursor was deleted meanwhile ends the lane
 * early: a scan sees what the lane held while it ran, never an error.
 */
async function* pagesOf(core: Core, owner: Owner, lane: Lane): AsyncGenerator<StoredMessage[]> {
  let before: string | undefined;
  for (;;) {
    const page = await core.history(owner, { ...lane, limit: PAGE, ...(before === undefined ? {} : { before }) });
    if (!page || page.messages.length === 0) return;
    yield page.messages;
    if (!page.has_more) return;
    before = page.messages[0].message_id;
  }
}

/** `findByClientMsgId` by paging through the chat's flat lane and its threads. */
export async function scanForClientMsgId(
  core: Core,
  owner: Owner,
  chatId: ChatId,
  clientMsgId: string,
): Promise<StoredMessage | undefined> {
  for (const lane of await lanesOf(core, owner)) {
    if (lane.chat_id !== chatId && lane.thread_id !== chatId) continue;
    for await (const page of pagesOf(core, owner, lane)) {
      const found = page.find((m) => m.client_msg_id === clientMsgId);
      if (found) return found;
    }
  }
  return undefined;
}

/** `search` by paging through every lane in scope and ranking as the search capability must. */
export async function scanSearch(core: Core, owner: Owner, query: SearchQuery): Promise<SearchHit[]> {
  if (searchTerms(query.query).length === 0 || query.limit < 1) return [];
  const scan = searchScan(query);
  for (const lane of await lanesOf(core, owner)) {
    if (!laneInScope(lane, query)) continue;
    for await (const page of pagesOf(core, owner, lane)) scan.add(page);
  }
  return scan.hits();
}

function laneInScope(lane: Lane, query: SearchQuery): boolean {
  if (query.scope !== "chat") return true;
  return query.thread_id !== undefined ? lane.thread_id === query.thread_id : lane.chat_id === query.chat_id;
}
