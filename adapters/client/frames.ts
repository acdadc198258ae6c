/**
 * The gateway → client frames as the client sees them, one payload type per frame type, and the
 * request → response table. Types only: nothing here exists at run time.
 * @module
 */
import type {
  Channel,
  ChatId,
  ClientPayloads,
  CommandEntry,
  ErrorCode,
  HistoryItem,
  MediaId,
  MediaRef,
  MessageId,
  MessageStatus,
  Notification,
  RuntimeInfo,
  SearchHit,
  Seq,
} from "chat-gateway";

/** Where a conversation frame belongs: a channel and, for a thread, the thread's own id. */
export interface LaneRef {
  chat_id: ChatId;
  /** The thread, or null in the channel's flat lane. */
  thread_id: ChatId | null;
}

/** `hello.ok`: the gateway accepted the device (docs/PROTOCOL.md §2.1). */
export interface HelloOkPayload {
  protocol: number;
  /** The owner's newest `seq` at the time of hello. */
  cursor: Seq;
  /** The signed-in user, or null when login protection is off. */
  user: string | null;
  /** The gateway's own streaming setting. */
  streaming: boolean;
  /** The gateway's bounds; the optional ones are absent on gateways that predate them. */
  limits: {
    max_frame_bytes: number;
    max_media_bytes: number;
    history_max: number;
    search_max: number;
    /** Largest `history` page in bytes of message JSON; a longer page comes back shorter with `has_more`. */
    history_max_bytes?: number;
    /** Frames per second sustained, from the first frame (`hello` included). */
    rate_per_second?: number;
    /** Frames in a burst. */
    rate_burst?: number;
    uploads_in_flight?: number;
    pulls_in_flight?: number;
    /** Milliseconds a connection has to complete `hello` (then close 4408). */
    hello_timeout_ms?: number;
    /** Connections per owner on one gateway process (then `rate_limited`, close 4429). */
    connections_per_owner?: number;
  };
}

/** `message`: a whole message (a user echo, or a non-streamed assistant answer). */
export interface MessagePayload extends HistoryItem, LaneRef {
  reply_to?: MessageId;
  /** Present on the echo of a send that carried one. */
  client_msg_id?: string;
}

/** `message.start`: a streamed assistant answer begins. */
export interface MessageStartPayload extends LaneRef {
  message_id: MessageId;
  role: "assistant";
}

/** `message.update`: the full current text of a streamed answer (replace, do not append). */
export interface MessageUpdatePayload extends LaneRef {
  message_id: MessageId;
  text: string;
  reasoning?: string;
}

/** `message.stop`: a streamed answer ended; the stored final form of it. */
export interface MessageStopPayload extends LaneRef {
  message_id: MessageId;
  final_text: string;
  reasoning: string;
  model?: string;
  tokens?: number;
  runtime: RuntimeInfo;
  /** Epoch milliseconds of the answer's start. */
  ts: number;
  media?: MediaRef[];
  /** Extension: how the answer ended (`complete`, `stopped`, `interrupted`, `error`). */
  status?: MessageStatus;
  reply_to?: MessageId;
}

/** `message.deleted`: drop these messages from the lane. */
export interface MessageDeletedPayload extends LaneRef {
  message_ids: MessageId[];
}

/** `commentary`: an intermediate assistant beat of a running answer. */
export interface CommentaryPayload extends LaneRef {
  message_id: MessageId;
  text: string;
}

/** `tool.start`: a tool call began, with its full arguments. */
export interface ToolStartPayload extends LaneRef {
  message_id: MessageId;
  index: number;
  name: string;
  preview: string;
  args: Record<string, unknown>;
}

/** `tool.end`: a tool call ended. */
export interface ToolEndPayload extends LaneRef {
  message_id: MessageId;
  index: number;
  name: string;
  output: unknown;
  /** Seconds. */
  duration: number;
  ok: boolean;
}

/** `typing`: the agent is (or stopped) working in a lane. */
export interface TypingPayload extends LaneRef {
  on: boolean;
}

/** `channel.list`: every channel and thread, archived included, favorites first. */
export interface ChannelListPayload {
  channels: Channel[];
}

/** `channel.deleted`. */
export interface ChannelDeletedPayload {
  chat_id: ChatId;
}

/** `search.results`: hits, best match first. */
export interface SearchResultsPayload {
  query: string;
  scope: "all" | "chat";
  hits: SearchHit[];
}

/** `history`: one page of a lane, oldest first. */
export interface HistoryPayload extends LaneRef {
  messages: HistoryItem[];
  has_more: boolean;
  /** Pass as `before_message_id` for the next older page; null on an empty page. */
  oldest_message_id: MessageId | null;
}

/** `commands.catalog`. */
export interface CommandsCatalogPayload {
  commands: CommandEntry[];
}

/** `media.offer`: media the gateway has for the device (with `message_id` when it belongs to an answer). */
export interface MediaOfferPayload extends MediaRef {
  chat_id?: ChatId;
  thread_id?: ChatId | null;
}

/** `media.upload.ack`: `ok` false when the bytes did not match the declared size or sha256. */
export interface MediaUploadAckPayload {
  ok: boolean;
  media_ref: string;
}

/** `media.pull.end`: the last chunk of a download was sent. */
export interface MediaPullEndPayload {
  ok: boolean;
  media_id: MediaId;
}

/** `error`: a request failed, or (without an id) the connection has a problem. */
export interface ErrorPayload {
  code: ErrorCode;
  message: string;
}

/** `pong`. */
export interface PongPayload {
  ts: number;
}

/** `sync.done`: the replay ended; `reset` means the cursor was too old and history must be refetched. */
export interface SyncDonePayload {
  cursor: Seq;
  reset?: boolean;
}

/** One choice of a picker (docs/PROTOCOL.md §11). */
export interface PickerOption {
  id: string;
  label: string;
}

/** Fields every picker card carries (docs/PROTOCOL.md §11). */
export interface PickerBase extends LaneRef {
  picker_id: string;
  /** The assistant message whose turn asked. */
  message_id: MessageId;
  title: string;
  /** Epoch milliseconds. */
  expires_at: number;
}

/** `picker.approval`: approve or deny an action. */
export interface PickerApprovalPayload extends PickerBase {
  body: string;
  tool?: { name: string; args: Record<string, unknown> };
  options: PickerOption[];
}

/** `picker.confirm`: a question; a clarification when `allow_text` is true. */
export interface PickerConfirmPayload extends PickerBase {
  body: string;
  options: PickerOption[];
  allow_text: boolean;
}

/** `picker.model`: choose the lane's model. */
export interface PickerModelPayload extends PickerBase {
  models: { id: string; label: string; current?: boolean }[];
}

/** `picker.resolved`: how an ask ended. */
export interface PickerResolvedPayload extends LaneRef {
  picker_id: string;
  outcome: "selected" | "expired" | "cancelled" | "interrupted";
  option_id?: string;
  text?: string;
  device_id?: string;
}

/** One completion: `value` is the whole completed line, e.g. `/model demo-fast`. */
export interface Completion {
  value: string;
  description: string;
}

/** `commands.complete`: completions of a typed slash command; `text` echoes the request's. */
export interface CommandsCompletePayload {
  text: string;
  completions: Completion[];
}

/** An ask still waiting for an answer, as the client tracks it: its picker frame's payload and its kind. */
export type OpenAsk =
  | ({ kind: "approval" } & PickerApprovalPayload)
  | ({ kind: "confirm" } & PickerConfirmPayload)
  | ({ kind: "model" } & PickerModelPayload);

/** The payload of every gateway → client frame, by frame type. */
export interface ServerPayloads {
  "hello.ok": HelloOkPayload;
  message: MessagePayload;
  "message.start": MessageStartPayload;
  "message.update": MessageUpdatePayload;
  "message.stop": MessageStopPayload;
  "message.deleted": MessageDeletedPayload;
  commentary: CommentaryPayload;
  "tool.start": ToolStartPayload;
  "tool.end": ToolEndPayload;
  typing: TypingPayload;
  notification: Notification;
  "channel.list": ChannelListPayload;
  "channel.created": Channel;
  "channel.renamed": Channel;
  "channel.deleted": ChannelDeletedPayload;
  "search.results": SearchResultsPayload;
  history: HistoryPayload;
  "commands.catalog": CommandsCatalogPayload;
  "media.offer": MediaOfferPayload;
  "media.upload.ack": MediaUploadAckPayload;
  "media.pull.end": MediaPullEndPayload;
  error: ErrorPayload;
  pong: PongPayload;
  "sync.done": SyncDonePayload;
  "picker.approval": PickerApprovalPayload;
  "picker.confirm": PickerConfirmPayload;
  "picker.model": PickerModelPayload;
  "picker.resolved": PickerResolvedPayload;
  "commands.complete": CommandsCompletePayload;
}

/** The type name of a gateway → client frame. */
export type ServerFrameType = keyof ServerPayloads;

/** One gateway → client frame. `seq` is set on frames the gateway stored in the owner's outbox. */
export interface ServerFrame<K extends ServerFrameType = ServerFrameType> {
  type: K;
  id?: string;
  seq?: Seq;
  payload: ServerPayloads[K];
}

/** The response frame type of each request the client can send (docs/PROTOCOL.md §1.1). */
export interface ResponseTypes {
  ping: "pong";
  "channel.list": "channel.list";
  "channel.create": "channel.created";
  "channel.update": "channel.renamed";
  "channel.set_default": "channel.renamed";
  "channel.delete": "channel.deleted";
  "message.send": "message";
  "message.delete": "message.deleted";
  history: "history";
  search: "search.results";
  "commands.catalog": "commands.catalog";
  "media.upload.end": "media.upload.ack";
  "media.pull": "media.pull.end";
  sync: "sync.done";
  "picker.select": "picker.resolved";
  "commands.complete": "commands.complete";
}

/** A client frame that has a response. */
export type RequestType = keyof ResponseTypes;

/** The payload of a request, as the gateway validates it. */
export type RequestPayload<T extends RequestType> = ClientPayloads[T];

/** The payload of the response to a request. */
export type ResponsePayload<T extends RequestType> = ServerPayloads[ResponseTypes[T]];
