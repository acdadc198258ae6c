/**
 * chat-gateway: reach an AI agent from phones, desktops and browsers over one typed frame
 * protocol. Start with {@link createGateway}.
 *
 * This entry holds what an embedder wires: the gateway, its options and the contracts it is given
 * (runtime, authenticator, bus, push, media). Each type has one home: the storage contract and its
 * records (`Storage`, `HookStore`, `ScheduleStore`…) are in `chat-gateway/storage`; the wire's
 * vocabulary (`GatewayError`, `ERROR_CODES`, `LIMITS`, `PROTOCOL_VERSION`…) is in
 * `chat-gateway/protocol`.
 * @module
 */
export { createGateway } from "./gateway.js";
export type { Gateway, ChannelApi, PostInput, NotifyInput } from "./gateway.js";
export type { AskActionOutcome } from "./asks/ask-actions.js";
export type { CloseOptions, GatewayStats } from "./gateway-ops.js";
export type { AdmissionRequest } from "./admission/queue.js";
export { addressKey } from "./admission/address-key.js";
export type { GatewayOptions, ResolvedOptions } from "./options/options.js";
export { consoleLogger, resolveLogger } from "./contracts/logger.js";
export type { Logger } from "./contracts/logger.js";
export type { GatewayEvents } from "./options/gateway-events.js";
export type { ChannelInput } from "./channels/channel-operations.js";
export type { ImportedMessage } from "./requests/imported-messages.js";
export { BUILTIN_COMMANDS, COMMAND_CATEGORIES } from "./turn/commands.js";
export type { BuiltinCommand, CommandRegistry, CommandHandler, CommandSource, ParsedCommand } from "./turn/commands.js";
export { parseCommand } from "./turn/commands.js";
export { bareModelId, homeRelative, buildRuntimeInfo } from "./turn/runtime-info.js";
export type { RuntimeInfoOptions, ModelPrice } from "./turn/runtime-info.js";
export type { RateLimit } from "./connection/token-bucket.js";
export type { Clock, ClockTimer } from "./support/clock.js";
export { ANONYMOUS_OWNER } from "./protocol/ids.js";
export type { Owner, ChatId, MessageId, DeviceId, MediaId, Seq, ConnectionId, RequestId } from "./protocol/ids.js";
export { toWireError } from "./protocol/errors.js";
export { ASK_LIMITS } from "./asks/ask-shapes.js";
export type {
  Channel,
  ChannelKind,
  MediaRef,
  MediaKind,
  RuntimeInfo,
  Role,
  MessageStatus,
  HistoryItem,
  ToolCall,
  AnsweredAsk,
  StoredMessage,
  SearchHit,
  Notification,
  NotificationKind,
  CommandEntry,
  CommandCategory,
  DeviceCaps,
  Device,
  WebPushSubscription,
  MediaRecord,
} from "./contracts/records.js";
export type { ScheduleApi, ScheduleInfo, ScheduleInput } from "./schedules/schedule-api.js";
export { openAuthenticator, tokenAuthenticator } from "./contracts/authenticator.js";
export type { Authenticator, AuthRequest, AuthResult, ConnectionContext } from "./contracts/authenticator.js";
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
  Ask,
  AskOption,
  AskAnswer,
  ApprovalAsk,
  ConfirmAsk,
  ModelAsk,
  Completion,
  CompleteInput,
  ToolApproval,
  SteerInput,
  ModelChoice,
} from "./contracts/runtime.js";
export { memoryBus } from "./contracts/bus.js";
export { outboxCatchUp } from "./outbox/catch-up.js";
export type { OutboxCatchUp, OutboxCatchUpHooks } from "./outbox/catch-up.js";
export type { Bus, BusMessage, OutgoingFrame } from "./contracts/bus.js";
export type { Connection, ConnectionHandle, UpgradeDecision } from "./contracts/connection.js";
export { memoryLaneLock } from "./contracts/lane-lock.js";
export type { LaneLock, LaneLease } from "./contracts/lane-lock.js";
export type { MediaStore, MediaWriter } from "./contracts/media-store.js";
export { PushSendError } from "./contracts/push.js";
export { NTFY_TOPIC_PATTERN, FCM_TOKEN_PATTERN, isNtfyTopic, isFcmToken } from "./push/push-targets.js";
export { isWebPushSubscription } from "./push/webpush-subscription.js";
export type { PushSender, PushMessage, PushAction } from "./contracts/push.js";
export type { SessionStore, Session } from "./contracts/session-store.js";
export type { Revocation } from "./connection/revocation.js";
