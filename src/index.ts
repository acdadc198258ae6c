/**
 * chat-gateway: reach an AI agent from phones, desktops and browsers over one typed frame
 * protocol. Start with {@link createGateway}.
 * @module
 */
export { createGateway } from "./gateway.js";
export type { Gateway, ChannelApi, PostInput, NotifyInput } from "./gateway.js";
export type { GatewayOptions, ResolvedOptions } from "./options.js";
export { consoleLogger, resolveLogger } from "./logger.js";
export type { Logger } from "./logger.js";
export type { GatewayEvents } from "./hub.js";
export type { ChannelInput } from "./channel-requests.js";
export { BUILTIN_COMMANDS, COMMAND_CATEGORIES } from "./commands.js";
export type { BuiltinCommand, CommandRegistry, CommandHandler, CommandSource, ParsedCommand } from "./commands.js";
export { parseCommand } from "./commands.js";
export { bareModelId, homeRelative, buildRuntimeInfo } from "./runtime-info.js";
export type { RuntimeInfoOptions, ModelPrice } from "./runtime-info.js";
export type { RateLimit } from "./token-bucket.js";
export { parseClientFrame, clientFrameStructs, FrameError } from "./frames.js";
export type { ClientFrame, ClientFrameType, ClientPayloads } from "./frames.js";
export { encodeChunk, decodeChunk } from "./media-transfer.js";
export { mediaTypeEssence, isInlineMediaType, MEDIA_TYPE_MAX_LENGTH } from "./media-types.js";
export { WORD_PATTERN, foldText, searchTerms, matchText, compareMatches, snippetAround } from "./search-text.js";
export type { TextMatch } from "./search-text.js";
export { ANONYMOUS_OWNER } from "./ids.js";
export type { Owner, ChatId, MessageId, DeviceId, MediaId, Seq } from "./ids.js";
export { GatewayError, ERROR_CODES, CLOSE_CODES, isGatewayError, toWireError } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export { PROTOCOL_VERSION, LIMITS, SERVER_FRAME_TYPES, STORED_FRAME_TYPES } from "./protocol.js";
export type { ServerFrameType, StoredFrameType } from "./protocol.js";
export { outboxRedactionKey, messageRedactionKey, channelRedactionKey } from "./outbox-redaction.js";
export { heldByAnother, mediaTakenError } from "./media-attachment.js";
export type {
  Channel,
  ChannelKind,
  MediaRef,
  MediaKind,
  RuntimeInfo,
  Role,
  MessageStatus,
  HistoryItem,
  StoredMessage,
  SearchHit,
  Notification,
  NotificationKind,
  CommandEntry,
  CommandCategory,
  DeviceCaps,
  Device,
  MediaRecord,
} from "./records.js";
export type {
  Storage,
  Change,
  CommitResult,
  OutboxFrame,
  OutboxEntry,
  OutboxBounds,
  Lane,
  HistoryQuery,
  HistoryPage,
  SearchQuery,
  RetentionPolicy,
} from "./storage.js";
export { openAuthenticator, tokenAuthenticator } from "./authenticator.js";
export type { Authenticator, AuthRequest, AuthResult, ConnectionContext } from "./authenticator.js";
export type {
  AgentRuntime,
  TurnInput,
  CommandInput,
  RuntimeEvent,
  TextEvent,
  ReasoningEvent,
  CommentaryEvent,
  ToolStartEvent,
  ToolEndEvent,
  UsageEvent,
  MediaEvent,
  DoneEvent,
} from "./runtime.js";
export { memoryBus } from "./bus.js";
export type { Bus, BusMessage, OutgoingFrame } from "./bus.js";
export type { Connection, ConnectionHandle, UpgradeDecision } from "./connection.js";
export type { LaneLock, LaneLease } from "./lane-lock.js";
export type { MediaStore, MediaWriter } from "./media-store.js";
export { PushSendError } from "./push.js";
export { NTFY_TOPIC_PATTERN, FCM_TOKEN_PATTERN, isNtfyTopic, isFcmToken } from "./push-targets.js";
export type { PushSender, PushMessage } from "./push.js";
export type { SessionStore, Session } from "./session-store.js";
export type { Revocation } from "./revocation.js";
