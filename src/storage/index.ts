/**
 * `chat-gateway/storage`: the storage author's kit, and the one home of the storage contract. The
 * contract's types are here and only here: `Storage`, `StorageImplementation` and its records
 * (`Change`, `OutboxEntry`, `HistoryPage`…), and the stores a storage may also be (`HookStore`,
 * `ScheduleStore`, `ActionTokenStore`, `DuePushStore`) with theirs.
 *
 * {@link defineStorage} turns an implementation of the Storage contract (docs/CUSTOM-STORAGE.md)
 * into the `Storage` that `createGateway({ storage })` takes; the search helpers rank matches and
 * cut snippets exactly as the core's fallback does, so a storage with its own `search` capability
 * answers the same as one without; {@link expectedChannelsHeld} and {@link sameRecord} compare
 * stored channels the way `Change.expectChannels` requires.
 *
 * An embedder who only wires a built-in storage needs nothing from here but, at most, a type to
 * annotate with (`import type { Storage } from "chat-gateway/storage"`).
 *
 * @example A storage of your own
 * ```ts
 * import { defineStorage } from "chat-gateway/storage";
 * export const myStorage = () => defineStorage({ commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice });
 * ```
 * @module
 */
export { defineStorage } from "./define-storage.js";
export { searchMessages, searchScan } from "./search-scan.js";
export type { SearchScan } from "./search-scan.js";
export { sameRecord } from "./same-record.js";
export { expectedChannelsHeld } from "./expected-channels.js";
export { makePrivateDir } from "./private-dir.js";
export {
  WORD_PATTERN,
  foldText,
  searchTerms,
  matchText,
  firstMatch,
  compareMatches,
  snippetAround,
  SNIPPET_SCAN,
} from "../protocol/search-text.js";
export type { TextMatch } from "../protocol/search-text.js";
export type {
  Storage,
  StorageImplementation,
  StorageCapabilities,
  AdoptedCounts,
  AdoptionRefused,
  Change,
  ChannelExpectation,
  CommitResult,
  OutboxFrame,
  OutboxEntry,
  OutboxBounds,
  Lane,
  LaneFence,
  HistoryQuery,
  LaneUnread,
  ReadMark,
  HistoryPage,
  SearchQuery,
  RetentionPolicy,
  TurnScope,
} from "../contracts/storage.js";
export type { HookStore, HookRecord, HookMode, OwnedHook, HookClaim } from "../contracts/hooks.js";
export type {
  ScheduleStore,
  ScheduleRecord,
  ScheduleRun,
  ScheduleRunStatus,
  OwnedSchedule,
} from "../contracts/schedules.js";
export type { ActionTokenStore, ActionTokenRecord } from "../contracts/action-tokens.js";
export type { DuePushStore, DuePushRecord } from "../contracts/due-pushes.js";
export { scheduleRunKey } from "../contracts/schedules.js";
