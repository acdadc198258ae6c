/**
 * Client → gateway frames (docs/PROTOCOL.md §1.1): one superstruct struct per frame for its
 * payload, and the types derived from them. The gateway validates every frame a device sends
 * with these structs ({@link parseClientFrame}); a client can build its requests against them.
 * @module
 */
import {
  array,
  define,
  boolean,
  enums,
  integer,
  nullable,
  optional,
  string,
  type,
  type Infer,
  type Struct,
} from "superstruct";
import { mediaKindStruct } from "./record-structs.js";

const id = string();
/**
 * Any JSON value: a field whose grammar the gateway checks itself, so that a bad value gets an
 * error naming the field (`unsupported`) instead of failing the frame's shape.
 */
// `{}` is any value but null and undefined; null is taken too (it clears the field).
// biome-ignore lint/complexity/noBannedTypes: any value but undefined, whose fields another struct checks
const checkedLater = define<{} | null>("checked later", () => true);
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
        delta: optional(boolean()),
      }),
    ),
    fcm_token: optional(string()),
    ntfy_topic: optional(string()),
    /** A Web Push subscription or null; its grammar is checked with a message naming the field (docs/PROTOCOL.md §16). */
    webpush: optional(checkedLater),
  }),
  "message.send": type({
    chat_id: id,
    thread_id: threadId,
    text: optional(string()),
    reply_to: optional(string()),
    media_refs: optional(array(string())),
    auto_thread: optional(boolean()),
    client_msg_id: optional(string()),
    when_busy: optional(enums(["queue", "interrupt", "steer"])),
  }),
  "turn.stop": type({ chat_id: id, thread_id: threadId }),
  "message.delete": type({
    chat_id: id,
    thread_id: threadId,
    message_ids: array(string()),
  }),
  "media.upload.start": type({
    media_ref: string(),
    kind: mediaKindStruct,
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
  "fcm.register": type({
    fcm_token: optional(string()),
    ntfy_topic: optional(string()),
    webpush: optional(checkedLater),
  }),
  "commands.catalog": type({}),
  ping: type({ ts: optional(integer()) }),
  "picker.select": type({ picker_id: string(), option_id: optional(string()), text: optional(string()) }),
  "commands.complete": type({ chat_id: id, thread_id: threadId, text: string() }),
  /** The device has shown the lane up to and including `message_id` (docs/PROTOCOL.md §15). */
  read: type({ chat_id: id, thread_id: threadId, message_id: string() }),
  // biome-ignore lint/suspicious/noExplicitAny: superstruct's Struct is invariant in its type parameters: a table of structs of different frames needs any
} satisfies Record<string, Struct<any, any>>;

/** The type name of a client frame. */
export type ClientFrameType = keyof typeof clientFrameStructs;

/** The payload of each client frame. */
export type ClientPayloads = { [K in ClientFrameType]: Infer<(typeof clientFrameStructs)[K]> };

/** A validated client frame. */
export type ClientFrame = {
  [K in ClientFrameType]: { type: K; id?: string; payload: ClientPayloads[K] };
}[ClientFrameType];
