/**
 * Which gateway frame answers which request (docs/PROTOCOL.md §1.1): the response carries the
 * request's `id`.
 * @module
 */
import type { ClientPayloads } from "./client-frames.js";
import type { ServerPayloads } from "./server-frames.js";

/** The response frame type of each request that has one (docs/PROTOCOL.md §1.1). */
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
  "turn.stop": "turn.stopped";
}

/** A client frame that has a response. */
export type RequestType = keyof ResponseTypes;

/** The payload of a request, as the gateway validates it. */
export type RequestPayload<T extends RequestType> = ClientPayloads[T];

/** The payload of the response to a request. */
export type ResponsePayload<T extends RequestType> = ServerPayloads[ResponseTypes[T]];
