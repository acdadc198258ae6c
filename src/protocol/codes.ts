/**
 * The protocol's error codes and WebSocket close codes (docs/PROTOCOL.md §8.1, §8.2), as both ends
 * read them.
 * @module
 */

/** The error codes of the frame protocol (docs/PROTOCOL.md §8.1). */
export type ErrorCode = "auth" | "not_found" | "rate_limited" | "media_too_large" | "unsupported" | "internal";

/** What each code means on each transport: the WebSocket close code that follows it (if any) and the HTTP status. */
export const ERROR_CODES: Readonly<Record<ErrorCode, { readonly httpStatus: number; readonly closeCode?: number }>> = {
  auth: { httpStatus: 401, closeCode: 4401 },
  not_found: { httpStatus: 404 },
  rate_limited: { httpStatus: 429 },
  media_too_large: { httpStatus: 413 },
  unsupported: { httpStatus: 400 },
  internal: { httpStatus: 500 },
};

/** WebSocket close codes the gateway uses (docs/PROTOCOL.md §8.2). */
export const CLOSE_CODES = {
  /** Server shutting down. */
  goingAway: 1001,
  /** Server restarting after draining (docs/PROTOCOL.md §18): reconnect at once, maybe to another process. */
  serviceRestart: 1012,
  /**
   * A `hello` with a field outside the protocol's grammar (an invalid `ntfy_topic` or
   * `fcm_token`), after an `error unsupported` naming it; the same hello would fail again.
   */
  invalidHello: 1008,
  /** A text frame over the size limit. */
  tooBig: 1009,
  /**
   * A consumer so slow that its send buffer passed the hard cap; it catches up with `sync`. With
   * the reason `retry_after_ms=<n>`: a hello shed as too many were in progress (docs/PROTOCOL.md §18.5).
   */
  tryAgainLater: 1013,
  /** Authentication failed, hello missing, or hello not completed in time. */
  auth: 4401,
  /** `hello` not completed within `helloTimeoutMs` (after an `error` `auth`); unlike 4401 a client may reconnect. */
  helloTimeout: 4408,
  /** Too many connections for this owner or client address (after an `error` `rate_limited`). */
  tooManyConnections: 4429,
  /** `caps.min_protocol` is newer than this gateway. */
  protocolTooNew: 4426,
} as const;
