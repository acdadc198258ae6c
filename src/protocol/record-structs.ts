/**
 * The records gateway frames carry (docs/PROTOCOL.md §3 to §7) as superstruct structs: a channel,
 * a media reference, runtime metadata, a history item, a search hit, a notification, a catalog
 * entry. Each is exact (`object`): it describes what this protocol version sends. A client that
 * must tolerate a newer gateway validates with `mask` (see {@link parseServerFrame}), which drops
 * fields it does not know instead of failing.
 * @module
 */
import {
  array,
  boolean,
  enums,
  integer,
  literal,
  nullable,
  number,
  object,
  optional,
  record,
  string,
  union,
  unknown,
} from "superstruct";

/** A conversation's lane: a channel, and the thread or null for its flat lane (docs/PROTOCOL.md §1). */
export const laneFields = { chat_id: string(), thread_id: nullable(string()) };

/** A channel or thread as the wire carries it (docs/PROTOCOL.md §3). */
export const channelStruct = object({
  chat_id: string(),
  name: string(),
  kind: enums(["default", "channel", "thread"]),
  parent_chat_id: nullable(string()),
  is_default: boolean(),
  archived: boolean(),
  auto: optional(literal(true)),
  favorite: optional(boolean()),
  icon: optional(nullable(string())),
  color: optional(nullable(string())),
  automation: optional(boolean()),
  /** In `channel.list`: assistant messages newer than the watermarks, at most 999 (docs/PROTOCOL.md §15). */
  unread: optional(integer()),
});

/** The kinds of media (docs/PROTOCOL.md §7). */
export const mediaKindStruct = enums(["image", "audio", "video", "document", "voice"]);

/** A reference to stored media (docs/PROTOCOL.md §7). */
export const mediaRefStruct = object({
  media_id: string(),
  kind: mediaKindStruct,
  mime: string(),
  size: integer(),
  filename: string(),
  message_id: optional(string()),
});

/** Runtime metadata for a client's footer (docs/PROTOCOL.md §4.2); every key is absent when unknown. */
export const runtimeInfoStruct = object({
  model: optional(string()),
  context_pct: optional(number()),
  cwd: optional(string()),
  latency: optional(number()),
  cost: optional(number()),
});

/** How an assistant message ended, or that it still runs (docs/PROTOCOL.md §4.3, extension). */
export const messageStatusStruct = enums(["complete", "streaming", "stopped", "interrupted", "error"]);

/**
 * A tool call kept on its answer (docs/PROTOCOL.md §14, extension): `args` is the JSON text cut at
 * 16 KiB (shorter once the answer's calls fill their 256 KiB) when `truncated`, and `output`
 * likewise; a tool still running when the turn ended has `ok: false` and `output: null`.
 */
export const toolCallStruct = object({
  index: integer(),
  name: string(),
  preview: string(),
  args: union([record(string(), unknown()), string()]),
  output: unknown(),
  ok: boolean(),
  duration: number(),
  truncated: optional(literal(true)),
});

/** An ask as it ended, kept on its answer (docs/PROTOCOL.md §14.5). */
export const answeredAskStruct = object({
  picker_id: string(),
  kind: enums(["approval", "confirm", "model"]),
  title: string(),
  outcome: enums(["selected", "expired", "cancelled", "interrupted"]),
  option_id: optional(string()),
  label: optional(string()),
  text: optional(string()),
  device_id: optional(string()),
  device_name: optional(string()),
  ts: integer(),
});

/** The fields every message carries on the wire, in history and in `message` frames alike (docs/PROTOCOL.md §4.1, §5). */
export const messageFields = {
  message_id: string(),
  role: enums(["user", "assistant"]),
  text: string(),
  reasoning: string(),
  ts: integer(),
  media: array(mediaRefStruct),
  model: optional(string()),
  tokens: optional(integer()),
  runtime: optional(runtimeInfoStruct),
  status: optional(messageStatusStruct),
  reply_to: optional(string()),
  tools: optional(array(toolCallStruct)),
  command: optional(literal(true)),
  asks: optional(array(answeredAskStruct)),
};

/** A history item (docs/PROTOCOL.md §5); `truncated` only when the page cap cut it. */
export const historyItemStruct = object({ ...messageFields, truncated: optional(literal(true)) });

/** A search hit (docs/PROTOCOL.md §5). */
export const searchHitStruct = object({
  message_id: string(),
  chat_id: string(),
  thread_id: nullable(string()),
  role: enums(["user", "assistant"]),
  snippet: string(),
  ts: integer(),
});

/** A notification (docs/PROTOCOL.md §6). */
export const notificationStruct = object({
  kind: enums(["channel_renamed", "channel_created", "channel_deleted", "cron", "approval", "clarify", "generic"]),
  title: string(),
  body: string(),
  ts: integer(),
  chat_id: optional(string()),
  thread_id: optional(nullable(string())),
  /** The open ask the notification is about (docs/PROTOCOL.md §11). */
  picker_id: optional(string()),
});

/** A slash command in the catalog (docs/PROTOCOL.md §6). */
export const commandEntryStruct = object({
  name: string(),
  description: string(),
  args_hint: string(),
  category: enums(["Session", "Configuration", "Tools & Skills", "Info", "Exit", "Plugin"]),
  aliases: array(string()),
});

/** The error codes (docs/PROTOCOL.md §8.1). */
export const errorCodeStruct = enums([
  "auth",
  "not_found",
  "rate_limited",
  "media_too_large",
  "unsupported",
  "internal",
]);
