/**
 * Gateway → client frames (docs/PROTOCOL.md §1.2): one superstruct struct per frame type for its
 * payload, the types derived from them, and which of them the gateway stores in the outbox.
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
  unknown,
  type Infer,
  type Struct,
} from "superstruct";
import {
  channelStruct,
  commandEntryStruct,
  errorCodeStruct,
  historyItemStruct,
  toolCallStruct,
  answeredAskStruct,
  laneFields,
  mediaKindStruct,
  mediaRefStruct,
  messageFields,
  messageStatusStruct,
  notificationStruct,
  runtimeInfoStruct,
  searchHitStruct,
} from "./record-structs.js";

/** `hello.ok.limits` (docs/PROTOCOL.md §2.1, §8.3); the later keys are absent on gateways that predate them. */
const helloLimits = object({
  max_frame_bytes: integer(),
  max_media_bytes: integer(),
  history_max: integer(),
  search_max: integer(),
  history_max_bytes: optional(integer()),
  rate_per_second: optional(number()),
  rate_burst: optional(number()),
  uploads_in_flight: optional(integer()),
  pulls_in_flight: optional(integer()),
  hello_timeout_ms: optional(integer()),
  connections_per_owner: optional(integer()),
  picker_text_max: optional(integer()),
});

/** A choice on a picker card (docs/PROTOCOL.md §11). */
const pickerOption = object({ id: string(), label: string() });
/** Fields every picker card carries (docs/PROTOCOL.md §11). */
const pickerFields = {
  picker_id: string(),
  ...laneFields,
  message_id: string(),
  title: string(),
  expires_at: integer(),
};

/** The payload struct of every gateway → client frame, by frame type. */
export const serverFrameStructs = {
  "hello.ok": object({
    protocol: integer(),
    cursor: integer(),
    user: nullable(string()),
    streaming: boolean(),
    limits: helloLimits,
    /** The extensions a device may use (docs/PROTOCOL.md §2.1); absent on gateways that predate it. */
    features: optional(array(string())),
  }),
  message: object({ ...messageFields, ...laneFields, client_msg_id: optional(string()) }),
  /** `reply_to` (**extension**): the user message this answer answers, so a client knows the stream before the stop. */
  "message.start": object({
    message_id: string(),
    role: literal("assistant"),
    model: optional(string()),
    reply_to: optional(string()),
    ...laneFields,
  }),
  /**
   * The whole `text`, or for a device with `caps.delta` (docs/PROTOCOL.md §12) `offset`/`append`
   * onto the text it holds; reasoning likewise, whole or `reasoning_offset`/`reasoning_append`.
   */
  "message.update": object({
    message_id: string(),
    text: optional(string()),
    offset: optional(integer()),
    append: optional(string()),
    reasoning: optional(string()),
    reasoning_offset: optional(integer()),
    reasoning_append: optional(string()),
    model: optional(string()),
    tokens: optional(integer()),
    ...laneFields,
  }),
  "message.stop": object({
    message_id: string(),
    final_text: string(),
    reasoning: string(),
    model: optional(string()),
    tokens: optional(integer()),
    runtime: runtimeInfoStruct,
    ts: integer(),
    media: array(mediaRefStruct),
    status: messageStatusStruct,
    reply_to: optional(string()),
    tools: optional(array(toolCallStruct)),
    asks: optional(array(answeredAskStruct)),
    ...laneFields,
  }),
  "message.deleted": object({ ...laneFields, message_ids: array(string()) }),
  commentary: object({ message_id: string(), text: string(), ...laneFields }),
  "tool.start": object({
    message_id: string(),
    index: integer(),
    name: string(),
    preview: string(),
    args: record(string(), unknown()),
    ...laneFields,
  }),
  "tool.end": object({
    message_id: string(),
    index: integer(),
    name: string(),
    output: unknown(),
    duration: number(),
    ok: boolean(),
    ...laneFields,
  }),
  typing: object({ on: boolean(), ...laneFields }),
  "turn.stopped": object({ ...laneFields, message_id: nullable(string()) }),
  "lane.queue": object({ ...laneFields, message_ids: array(string()) }),
  notification: notificationStruct,
  "channel.list": object({ channels: array(channelStruct) }),
  "channel.created": channelStruct,
  "channel.renamed": channelStruct,
  "channel.deleted": object({ chat_id: string() }),
  "search.results": object({ query: string(), scope: enums(["all", "chat"]), hits: array(searchHitStruct) }),
  history: object({
    ...laneFields,
    messages: array(historyItemStruct),
    has_more: boolean(),
    oldest_message_id: nullable(string()),
  }),
  "commands.catalog": object({ commands: array(commandEntryStruct) }),
  "media.offer": object({
    media_id: string(),
    kind: mediaKindStruct,
    mime: string(),
    size: integer(),
    filename: string(),
    message_id: string(),
    ...laneFields,
  }),
  "media.upload.ack": object({ ok: boolean(), media_ref: string() }),
  "media.pull.end": object({ ok: boolean(), media_id: string() }),
  "sync.done": object({ cursor: integer(), reset: optional(literal(true)) }),
  pong: object({ ts: integer() }),
  error: object({ code: errorCodeStruct, message: string() }),
  "picker.approval": object({
    ...pickerFields,
    body: string(),
    tool: optional(object({ name: string(), args: record(string(), unknown()), args_cut: optional(literal(true)) })),
    options: array(pickerOption),
  }),
  "picker.confirm": object({ ...pickerFields, body: string(), options: array(pickerOption), allow_text: boolean() }),
  "picker.model": object({
    ...pickerFields,
    models: array(object({ id: string(), label: string(), current: optional(literal(true)) })),
  }),
  "picker.resolved": object({
    picker_id: string(),
    ...laneFields,
    outcome: enums(["selected", "expired", "cancelled", "interrupted"]),
    option_id: optional(string()),
    text: optional(string()),
    device_id: optional(string()),
    device_name: optional(string()),
  }),
  /** A lane's read watermark moved (docs/PROTOCOL.md §15); `ts` is the read message's. */
  read: object({ ...laneFields, message_id: string(), device_id: string(), ts: integer() }),
  "commands.complete": object({
    text: string(),
    completions: array(object({ value: string(), description: string() })),
  }),
  // biome-ignore lint/suspicious/noExplicitAny: superstruct's Struct is invariant in its type parameters: a table of structs of different frames needs any
} satisfies Record<string, Struct<any, any>>;

/** The type name of a gateway → client frame. */
export type ServerFrameType = keyof typeof serverFrameStructs;

/**
 * Every frame type the gateway sends to a device (docs/PROTOCOL.md §1.2), the stored ones
 * included. The gateway's sending code accepts only these names, so a new frame type starts here.
 */
export const SERVER_FRAME_TYPES = Object.freeze(Object.keys(serverFrameStructs)) as readonly ServerFrameType[];

/**
 * The frames the gateway stores in the owner's outbox: they carry a `seq` and `sync` replays them
 * (docs/PROTOCOL.md §5). Every other gateway frame is live only.
 */
export const STORED_FRAME_TYPES = [
  "message",
  "message.stop",
  "message.deleted",
  "channel.created",
  "channel.renamed",
  "channel.deleted",
  "notification",
  "media.offer",
  "picker.approval",
  "picker.confirm",
  "picker.model",
  "picker.resolved",
  "read",
] as const satisfies readonly ServerFrameType[];

/** The frames of docs/PROTOCOL.md §11 that only a device with `caps.pickers` receives. */
export const PICKER_FRAME_TYPES: ReadonlySet<string> = new Set([
  "picker.approval",
  "picker.confirm",
  "picker.model",
  "picker.resolved",
]);

/**
 * The extensions this gateway honours, listed in `hello.ok.features` (docs/PROTOCOL.md §2.1) so
 * a client can tell before it relies on one.
 */
export const FEATURES: readonly string[] = Object.freeze([
  "pickers",
  "delta",
  "commands.complete",
  "client_msg_id",
  "channel.create",
  "channel.update",
  "channel.delete",
  "caps.streaming",
  "sync.reset",
  "turn.queue",
  "turn.stop",
  "join.live",
  "message.tools",
  "message.command",
  "read",
  "message.asks",
]);

/** The type name of a frame the gateway stores in the outbox. */
export type StoredFrameType = (typeof STORED_FRAME_TYPES)[number];

/** The payload of each gateway → client frame, by frame type. */
export type ServerPayloads = { [K in ServerFrameType]: Infer<(typeof serverFrameStructs)[K]> };

/**
 * One gateway → client frame: a union over the frame types, each with its own payload, so a
 * payload that does not fit its type fails the build. The gateway builds, sends and stores
 * frames of this type; a client receives them (`seq` is set on frames stored in the owner's
 * outbox, `id` on the response to a request, docs/PROTOCOL.md §1).
 */
export type ServerFrame<K extends ServerFrameType = ServerFrameType> = {
  [T in K]: {
    type: T;
    /** The id of the request this frame answers (docs/PROTOCOL.md §1). */
    id?: string;
    seq?: number;
    payload: ServerPayloads[T];
  };
}[K];
