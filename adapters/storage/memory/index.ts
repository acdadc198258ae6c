/**
 * In-memory {@link Storage}: everything lives in the process and is gone when it exits. The
 * reference implementation of the storage contract, for tests, examples and single-run tools.
 *
 * ```ts
 * import { memoryStorage } from "chat-gateway/storage/memory";
 * const storage = memoryStorage();
 * ```
 * @module
 */
import type { ChatId, Owner, SearchHit, Seq, StoredMessage } from "chat-gateway";
import type {
  AdoptedCounts,
  AdoptionRefused,
  Change,
  CommitResult,
  HistoryPage,
  HistoryQuery,
  HookStore,
  OutboxBounds,
  OutboxEntry,
  RetentionPolicy,
  ScheduleStore,
  SearchQuery,
  Storage,
  TurnScope,
} from "chat-gateway/storage";
import { defineStorage, searchMessages } from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import { applyChange } from "./commit.js";
import { emptyState, type OwnerState } from "./owner-state.js";
import { countUnread } from "./read-marks.js";
import { memoryHooks } from "./hooks.js";
import { memorySchedules } from "./schedules.js";
import { memoryActionTokens } from "./action-tokens.js";
import { memoryDuePushes } from "./due-pushes.js";

/** Options of {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /** Clock for the `ts` of outbox entries, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** No history: no outbox frame, channel, message or media (devices aside, which adoption leaves). */
function holdsNoHistory(s: OwnerState): boolean {
  return s.outbox.length === 0 && s.channels.size === 0 && s.messages.size === 0 && s.media.size === 0;
}

/** Moves one owner's history to another that holds nothing; devices stay (the `adoptOwner` capability). */
function adopt(owners: Map<Owner, OwnerState>, from: Owner, to: Owner): AdoptedCounts | AdoptionRefused {
  const s = owners.get(from);
  if (!s || holdsNoHistory(s)) return { channels: 0, messages: 0, outbox: 0, media: 0 };
  const target = owners.get(to);
  if (target && (target.lastSeq > 0 || !holdsNoHistory(target) || target.devices.size > 0))
    return { refused: "target_has_data" };
  // One synchronous step: nothing can run between taking the state from one owner and giving it.
  // `from` keeps its last seq, since seqs are never reused, and its devices with their push targets.
  owners.set(from, { ...emptyState(), lastSeq: s.lastSeq, devices: s.devices });
  for (const record of s.media.values()) record.owner = to;
  owners.set(to, { ...s, devices: new Map() });
  return {
    channels: s.channels.size,
    messages: s.messages.size,
    outbox: s.outbox.filter((e) => !e.redacted).length,
    media: s.media.size,
  };
}

function byTsThenId(a: StoredMessage, b: StoredMessage): number {
  if (a.ts !== b.ts) return a.ts - b.ts;
  return a.message_id < b.message_id ? -1 : a.message_id > b.message_id ? 1 : 0;
}

function inLane(m: StoredMessage, chatId: ChatId, threadId: ChatId | null): boolean {
  return m.chat_id === chatId && m.thread_id === threadId;
}

/** Index of the first entry with `seq > after` (entries are ascending by `seq`). */
function firstAfter(outbox: OutboxEntry[], after: Seq): number {
  let lo = 0;
  let hi = outbox.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (outbox[mid].seq <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Copies of the messages that pass `wanted`, of every owner or of one lane. */
function listTurns(
  owners: Map<Owner, OwnerState>,
  scope: TurnScope | undefined,
  wanted: (m: StoredMessage) => boolean,
): Array<{ owner: Owner; message: StoredMessage }> {
  const out: Array<{ owner: Owner; message: StoredMessage }> = [];
  const scoped = scope ? [[scope.owner, owners.get(scope.owner)] as const] : [...owners];
  for (const [owner, s] of scoped) {
    for (const m of s?.messages.values() ?? []) {
      if (scope?.chat_id !== undefined && (m.chat_id !== scope.chat_id || m.thread_id !== (scope.thread_id ?? null)))
        continue;
      if (wanted(m)) out.push({ owner, message: structuredClone(m) });
    }
  }
  return out;
}

/** Reads never create owner state, so probing unknown owners costs nothing. */
type Peek = (owner: Owner) => OwnerState | undefined;

/** The channel and message reads of {@link memoryStorage}. */
function messageReads(
  peek: Peek,
): Pick<Storage, "getChannel" | "listChannels" | "getMessage" | "findByClientMsgId" | "history" | "search"> {
  return {
    async getChannel(owner, chatId) {
      const ch = peek(owner)?.channels.get(chatId);
      return ch && structuredClone(ch);
    },

    async listChannels(owner) {
      return structuredClone([...(peek(owner)?.channels.values() ?? [])]);
    },

    async getMessage(owner, messageId) {
      const m = peek(owner)?.messages.get(messageId);
      return m && structuredClone(m);
    },

    async findByClientMsgId(owner, chatId, clientMsgId) {
      for (const m of peek(owner)?.messages.values() ?? []) {
        if (m.client_msg_id === clientMsgId && (m.chat_id === chatId || m.thread_id === chatId)) {
          return structuredClone(m);
        }
      }
      return undefined;
    },

    async history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined> {
      const s = peek(owner);
      const threadId = query.thread_id ?? null;
      let end: number;
      const lane = [...(s?.messages.values() ?? [])].filter((m) => inLane(m, query.chat_id, threadId)).sort(byTsThenId);
      if (query.before !== undefined) {
        end = lane.findIndex((m) => m.message_id === query.before);
        if (end < 0) return undefined;
      } else {
        end = lane.length;
      }
      // The newest `limit`, fewer once they hold the contract's byte bound (LIMITS.storagePageBytes).
      const floor = Math.max(0, end - query.limit);
      let start = end;
      let bytes = 0;
      while (start > floor && bytes < LIMITS.storagePageBytes) bytes += JSON.stringify(lane[--start]).length;
      return { messages: structuredClone(lane.slice(start, end)), has_more: start > 0 };
    },

    async search(owner: Owner, query: SearchQuery): Promise<SearchHit[]> {
      const s = peek(owner);
      if (!s) return [];
      return searchMessages(s.messages.values(), query);
    },
  };
}

/** The outbox reads and retention of {@link memoryStorage}. */
function outboxMethods(peek: Peek): Pick<Storage, "readOutbox" | "outboxBounds" | "pruneOutbox"> {
  return {
    async readOutbox(owner, after, limit, types) {
      const outbox = peek(owner)?.outbox ?? [];
      const out: OutboxEntry[] = [];
      let bytes = 0;
      for (
        let i = firstAfter(outbox, after);
        i < outbox.length && out.length < limit && bytes < LIMITS.storagePageBytes;
        i++
      ) {
        const { redacted, redactKey: _key, ...entry } = outbox[i];
        if (redacted || (types && !types.includes(entry.type))) continue;
        out.push(structuredClone(entry));
        bytes += JSON.stringify(entry.payload).length;
      }
      return out;
    },

    async outboxBounds(owner: Owner): Promise<OutboxBounds> {
      const s = peek(owner);
      if (!s) return { first: 1, last: 0 };
      return { first: s.outbox.length ? s.outbox[0].seq : s.lastSeq + 1, last: s.lastSeq };
    },

    async pruneOutbox(owner: Owner, policy: RetentionPolicy, at: number): Promise<void> {
      const s = peek(owner);
      if (!s) return;
      const cutoff = at - policy.maxAgeMs;
      let drop = Math.max(0, s.outbox.length - Math.max(0, policy.maxFrames));
      while (drop < s.outbox.length && s.outbox[drop].ts < cutoff) drop++;
      if (drop > 0) s.outbox.splice(0, drop);
    },
  };
}

/** The device and media records of {@link memoryStorage}. */
function recordMethods(
  state: (owner: Owner) => OwnerState,
  peek: Peek,
): Pick<Storage, "getDevice" | "listDevices" | "putDevice" | "getMedia" | "putMedia" | "deleteMedia"> {
  return {
    async getDevice(owner, deviceId) {
      const d = peek(owner)?.devices.get(deviceId);
      return d && structuredClone(d);
    },

    async listDevices(owner) {
      return structuredClone([...(peek(owner)?.devices.values() ?? [])]);
    },

    async putDevice(owner, device) {
      const d = structuredClone(device);
      state(owner).devices.set(d.device_id, d);
    },

    async getMedia(owner, mediaId) {
      const m = peek(owner)?.media.get(mediaId);
      return m && structuredClone(m);
    },

    async putMedia(owner, media) {
      const m = structuredClone(media);
      state(owner).media.set(m.media_id, m);
    },

    async deleteMedia(owner, mediaIds) {
      const s = peek(owner);
      if (!s) return;
      for (const id of mediaIds) s.media.delete(id);
    },
  };
}

/**
 * Creates a {@link Storage} that keeps everything in memory. Every value goes in and comes out as
 * a copy, so callers can never change stored state by mutating what they passed or received.
 * It has every capability (`fencing` too) but `uniqueClientMsgId`: nothing outside this process can share it.
 * It is also a {@link HookStore} and a {@link ScheduleStore}, whose hooks and schedules `adoptOwner`
 * moves with the channels: `createGateway({ storage, hookStore: storage, scheduleStore: storage })`.
 */
export function memoryStorage(options: MemoryStorageOptions = {}): Storage & HookStore & ScheduleStore {
  if (options.now !== undefined && typeof options.now !== "function") {
    throw new TypeError("memoryStorage: options.now must be a function returning epoch milliseconds");
  }
  const now = options.now ?? Date.now;
  const owners = new Map<Owner, OwnerState>();

  function state(owner: Owner): OwnerState {
    let s = owners.get(owner);
    if (!s) {
      s = emptyState();
      owners.set(owner, s);
    }
    return s;
  }

  /** Reads never create owner state, so probing unknown owners costs nothing. */
  function peek(owner: Owner): OwnerState | undefined {
    return owners.get(owner);
  }

  const hooks = memoryHooks();
  const schedules = memorySchedules();
  const storage = defineStorage({
    ...messageReads(peek),
    ...outboxMethods(peek),
    ...recordMethods(state, peek),
    actionTokens: memoryActionTokens(),
    duePushes: memoryDuePushes(),

    async commit(owner: Owner, change: Change): Promise<CommitResult> {
      return applyChange(state(owner), change, now);
    },

    async adoptOwner(from: Owner, to: Owner): Promise<AdoptedCounts | AdoptionRefused> {
      const moved = adopt(owners, from, to);
      // This storage is also the hook and schedule store: they go with the channels they post into.
      if (!("refused" in moved)) for (const part of [hooks, schedules]) part.moveOwner(from, to);
      return moved;
    },

    async unfinishedMessages(scope?: TurnScope) {
      return listTurns(owners, scope, (m) => m.role === "assistant" && m.status === "streaming");
    },

    async readMarks(owner: Owner) {
      return structuredClone([...(peek(owner)?.reads.values() ?? [])]);
    },

    async unreadCounts(owner: Owner, cap: number) {
      const s = peek(owner);
      return s ? countUnread(s.messages.values(), s.reads, cap) : [];
    },

    // One process: its commits run one at a time, so the lane token is checked and raised atomically.
    capabilities: { fencing: true },

    async waitingTurns(scope?: TurnScope) {
      return listTurns(owners, scope, (m) => m.waiting === true).sort(
        (a, b) => a.message.ts - b.message.ts || (a.message.message_id < b.message.message_id ? -1 : 1),
      );
    },
  });
  return Object.assign(storage, hooks.members, schedules.members);
}
