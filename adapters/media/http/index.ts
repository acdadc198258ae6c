/**
 * Media over HTTP (docs/PROTOCOL.md §9.8): {@link createMediaHandler} serves an owner's media to
 * browsers at `GET /api/media/{media_id}` from the gateway's storage and media store, so that a
 * browser can show an image or download a file without the WebSocket.
 * @module
 */
export { createMediaHandler } from "../../http/media-route.js";
export type { MediaHandler, MediaHandlerOptions } from "../../http/media-route.js";
