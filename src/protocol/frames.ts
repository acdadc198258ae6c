/**
 * Client → gateway frames: one superstruct struct per frame, types derived from them, and the
 * parser that turns a text frame into a validated request. Gateway → client frames are built by
 * the gateway itself from the names in `SERVER_FRAME_TYPES` (protocol.ts) and never validated again.
 * @module
 */
import {
  array,
  boolean,
  enums,
  integer,
  literal,
  nullable,
  optional,
  record,
  string,
  type,
  union,
  unknown,
  validate,
  type Infer,
  type Struct,
} from "superstruct";
import { GatewayError } from "../errors.js";
import { frameShapeProblem } from "./frame-shape.js";

const id = string();
const mediaKind = enums(["image", "audio", "video", "document", "voice"]);
/** A thread id may be absent or null for the flat lane. */
const threadId = optional(nullable(string()));

/** The structs of every client frame, by frame type. `type()` ignores unknown fields (forward compatible). */
export const clientFrameStructs = {
  hello: type({
    token: string(),
    device_id: string(),
    device_name: optional(string()),
    caps: optional(
      type({
        min_protocol: optional(integer()),
        media: optional(boolean()),
        push: optional(string()),
        streaming: optional(boolean()),
        pickers: optional(boolean()),
      }),
    ),
    fcm_token: optional(string()),
    ntfy_topic: optional(string()),
  }),
  "message.send": type({
    chat_id: id,
    thread_id: threadId,
    text: optional(string()),
    reply_to: optional(string()),
    media_refs: optional(array(string())),
    auto_thread: optional(boolean()),
    client_msg_id: optional(string()),
  }),
  "message.delete": type({
    chat_id: id,
    thread_id: threadId,
    message_ids: array(string()),
  }),
  "media.upload.start": type({
    media_ref: string(),
    kind: mediaKind,
    mime: string(),
    size: integer(),
    filename: string(),
  }),
  "media.upload.end": type({ media_ref: string(), sha256: string() }),
  "media.pull": type({ media_id: string() }),
  "channel.list": type({}),
  "channel.set_default": type({ chat_id: id }),
  "channel.create": type({
    name: string(),
    kind: enums(["channel", "thread"]),
    parent_chat_id: optional(nullable(string())),
    favorite: optional(boolean()),
    icon: optional(nullable(string())),
    color: optional(nullable(string())),
    automation: optional(boolean()),
  }),
  "channel.update": type({
    chat_id: id,
    name: optional(string()),
    archived: optional(boolean()),
    favorite: optional(boolean()),
    icon: optional(nullable(string())),
    color: optional(nullable(string())),
  }),
  "channel.delete": type({ chat_id: id }),
  search: type({
    query: string(),
    scope: enums(["all", "chat"]),
    chat_id: optional(string()),
    thread_id: optional(nullable(string())),
    limit: optional(integer()),
  }),
  sync: type({ cursor: integer() }),
  history: type({
    chat_id: id,
    thread_id: threadId,
    before_message_id: optional(nullable(string())),
    limit: optional(integer()),
  }),
  "fcm.register": type({ fcm_token: optional(string()), ntfy_topic: optional(string()) }),
  "commands.catalog": type({}),
  ping: type({ ts: optional(integer()) }),
  "picker.select": type({ picker_id: string(), option_id: optional(string()), text: optional(string()) }),
  "commands.complete": type({ chat_id: id, thread_id: threadId, text: string() }),
} satisfies Record<string, Struct<any, any>>;

/** The same structs in a Map, so that a frame type such as `toString` never finds `Object.prototype`. */
const structsByType: ReadonlyMap<string, Struct<any, any>> = new Map(Object.entries(clientFrameStructs));

/** The type name of a client frame. */
export type ClientFrameType = keyof typeof clientFrameStructs;

/** The payload of each client frame. */
export type ClientPayloads = { [K in ClientFrameType]: Infer<(typeof clientFrameStructs)[K]> };

/** A validated client frame. */
export type ClientFrame = {
  [K in ClientFrameType]: { type: K; id?: string; payload: ClientPayloads[K] };
}[ClientFrameType];

/** The envelope of every frame (docs/PROTOCOL.md §1). */
const envelope = type({
  type: string(),
  id: optional(union([string(), literal(null)])),
  payload: optional(union([record(string(), unknown()), literal(null)])),
});

/**
 * Whatever is known of a frame that failed validation: its type and request id, so that the
 * error can be sent with the id.
 */
export class FrameError extends GatewayError {
  readonly frameType: string | undefined;
  readonly requestId: string | undefined;
  constructor(message: string, frameType?: string, requestId?: string) {
    super("unsupported", message);
    this.frameType = frameType;
    this.requestId = requestId;
  }
}

/** Longest validation message sent back: superstruct quotes the value it got, which may be most of the frame. */
const MAX_MESSAGE_CHARS = 300;

/** A frame type quoted in a message, cut short: an error never echoes most of a frame. */
function quoteType(type: string): string {
  return JSON.stringify(type.length > 64 ? `${type.slice(0, 64)}…` : type);
}

function describeFailure(frameType: string, failure: { path: Array<string | number>; message: string }): string {
  const field = failure.path.join(".");
  // The field is named once, in our words, instead of superstruct's "At path: x -- " prefix.
  const prefix = `At path: ${field} -- `;
  const detail = field && failure.message.startsWith(prefix) ? failure.message.slice(prefix.length) : failure.message;
  const text = field ? `invalid ${frameType}: field "${field}": ${detail}` : `invalid ${frameType}: ${detail}`;
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
}

/**
 * Validate against a struct; a failure becomes a {@link FrameError}. superstruct quotes the wrong
 * value with `${value}`, which throws for an object that has its own `toString` field: that frame
 * is refused the same way, without naming the field.
 */
function check<T>(value: unknown, struct: Struct<T, any>, label: string, frameType: string | undefined, requestId: string | undefined): T {
  let result: ReturnType<typeof validate<T, any>>;
  try {
    result = validate(value, struct);
  } catch {
    throw new FrameError(`invalid ${label}: a field has a value of the wrong type`, frameType, requestId);
  }
  const [failure, valid] = result;
  if (failure) throw new FrameError(describeFailure(label, failure), frameType, requestId);
  return valid as T;
}

/**
 * Parse and validate one text frame. Throws {@link FrameError} (code `unsupported`) naming the
 * field at fault; never throws anything else.
 */
export function parseClientFrame(text: string): ClientFrame {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new FrameError("malformed JSON");
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new FrameError("a frame is a JSON object");
  const requestId = typeof (raw as { id?: unknown }).id === "string" ? ((raw as { id: string }).id) : undefined;
  const rawType = typeof (raw as { type?: unknown }).type === "string" ? ((raw as { type: string }).type) : undefined;
  const shapeProblem = frameShapeProblem(raw);
  if (shapeProblem) throw new FrameError(shapeProblem, rawType, requestId);
  const frame = check(raw, envelope, "frame", rawType, requestId);
  const struct = structsByType.get(frame.type);
  if (!struct) throw new FrameError(`unknown frame type ${quoteType(frame.type)}`, frame.type, requestId);
  const payload = check(frame.payload ?? {}, struct, frame.type, frame.type, requestId);
  return { type: frame.type, id: requestId, payload } as ClientFrame;
}
