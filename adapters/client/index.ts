/**
 * `chat-gateway/client`: a typed client for browsers and Node. It says hello, keeps the
 * connection up with reconnects (exponential backoff with jitter), syncs from a persisted cursor
 * after every (re)connect, turns every gateway frame into a typed event, and offers requests as
 * promises with timeouts, a history pager, media uploads and downloads checked with sha256
 * (WebCrypto), a per-device streaming toggle, and the asks of docs/PROTOCOL.md §11: the open
 * asks tracked across reconnects and reloads, answered with `select`, and slash completions.
 *
 * It uses `globalThis.WebSocket` when there is one (browsers) and the optional `ws` package
 * otherwise, and imports no Node module, so it bundles for the browser as it is. Its payload
 * types are derived from `chat-gateway/protocol`, which is the one home of the frame types
 * (`ServerFrame`, `ServerPayloads`, `RequestType`…), the media chunk codec and the close codes;
 * `Completion`, what `complete()` resolves to, is the runtime's, from `chat-gateway`.
 *
 * Start with {@link createGatewayClient}.
 * @module
 */
export { createGatewayClient, GatewayClient } from "./client.js";
export type { RunningTurn, RunningTool, LaneQueue } from "./live-turns.js";
export { HistoryPager } from "./history-pager.js";
export type { HistoryRequester, LaneQuery } from "./history-pager.js";
export { approveCommand, denyCommand, answerCommand, modelCommand } from "./slash-answers.js";
export { memoryOpenAsksStore, localStorageOpenAsksStore } from "./open-asks.js";
export type { OpenAsksStore } from "./open-asks.js";
export type { GatewayClientOptions, ReconnectOptions, RequestOptions, SendInput, SendOptions } from "./options.js";
export type { GatewayClientEvents, ConnectionState, StateInfo } from "./events.js";
export type { UploadOptions, Download, DownloadOptions } from "./transfers.js";
export type { WebSocketLike, WebSocketConstructor } from "./socket.js";
export { ClientError, isClientError } from "./errors.js";
export type { ClientErrorCode } from "./errors.js";
export { memoryCursorStore, localStorageCursorStore } from "./cursor.js";
export type { CursorStore } from "./cursor.js";
export { encodeMediaChunk, decodeMediaChunk, sha256Hex, CHUNK_BYTES } from "./media.js";
export type {
  LaneRef,
  HelloOkPayload,
  MessagePayload,
  MessageStartPayload,
  MessageUpdatePayload,
  MessageStopPayload,
  MessageDeletedPayload,
  CommentaryPayload,
  ToolStartPayload,
  ToolEndPayload,
  TypingPayload,
  ChannelListPayload,
  ChannelDeletedPayload,
  SearchResultsPayload,
  HistoryPayload,
  CommandsCatalogPayload,
  MediaOfferPayload,
  MediaUploadAckPayload,
  MediaPullEndPayload,
  ErrorPayload,
  PongPayload,
  SyncDonePayload,
  PickerApprovalPayload,
  PickerConfirmPayload,
  PickerModelPayload,
  PickerResolvedPayload,
  CommandsCompletePayload,
  OpenAsk,
} from "./frames.js";
