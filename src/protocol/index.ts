/**
 * `chat-gateway/protocol`: the frame protocol (docs/PROTOCOL.md) as code both ends share. The
 * superstruct structs of every frame in both directions with the types derived from them, the
 * request → response table, the error and close codes, the version and limits, the binary media
 * chunk codec and the `channel.list` order.
 *
 * It imports no Node module (no `node:*`, no `Buffer`), so it bundles for the browser as it is;
 * the gateway validates what devices send with the same structs, and the typed client
 * (`chat-gateway/client`) and the example web UI are built on it.
 *
 * @example Validate a frame received from the gateway
 * ```ts
 * import { parseServerFrame } from "chat-gateway/protocol";
 *
 * socket.onmessage = (event) => {
 *   const frame = parseServerFrame(event.data);
 *   if (frame?.type === "message") console.log(frame.payload.text);
 * };
 * ```
 * @module
 */
export { PROTOCOL_VERSION, LIMITS } from "./limits.js";
export { ERROR_CODES, CLOSE_CODES } from "./codes.js";
export type { ErrorCode } from "./codes.js";
export { GatewayError, isGatewayError } from "./errors.js";
export { clientFrameStructs } from "./client-frames.js";
export type { ClientFrame, ClientFrameType, ClientPayloads } from "./client-frames.js";
export { parseClientFrame, FrameError } from "./parse-client-frame.js";
export {
  serverFrameStructs,
  SERVER_FRAME_TYPES,
  STORED_FRAME_TYPES,
  PICKER_FRAME_TYPES,
  FEATURES,
} from "./server-frames.js";
export type { ServerFrame, ServerFrameType, ServerPayloads, StoredFrameType } from "./server-frames.js";
export { parseServerFrame, serverFrameProblem } from "./parse-server-frame.js";
export type { ResponseTypes, RequestType, RequestPayload, ResponsePayload } from "./responses.js";
export {
  channelStruct,
  mediaRefStruct,
  mediaKindStruct,
  runtimeInfoStruct,
  messageStatusStruct,
  historyItemStruct,
  searchHitStruct,
  notificationStruct,
  commandEntryStruct,
  errorCodeStruct,
} from "./record-structs.js";
export { encodeChunk, decodeChunk, readChunk } from "./chunk-codec.js";
export { mediaTypeEssence, isInlineMediaType, MEDIA_TYPE_MAX_LENGTH } from "./media-types.js";
export type { MediaChunk } from "./chunk-codec.js";
export { compareChannels } from "./channel-order.js";
export type { OrderedChannel } from "./channel-order.js";
