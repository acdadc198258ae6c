/**
 * The one error type of the client.
 * @module
 */
import type { ErrorCode } from "chat-gateway/protocol";

/**
 * Why a client call failed: one of the gateway's protocol codes (from its `error` frame), or one
 * of the client's own: `timeout` (no response in time), `disconnected` (the socket closed before
 * the response), `closed` (the client was closed or stopped for good), `upload_failed` (the
 * gateway answered `media.upload.ack {ok: false}`), `download_failed` (`media.pull.end {ok: false}`).
 */
export type ClientErrorCode = ErrorCode | "timeout" | "disconnected" | "closed" | "upload_failed" | "download_failed";

/** A failed request or transfer, with a {@link ClientErrorCode}. */
export class ClientError extends Error {
  /** What went wrong, as a stable string. */
  readonly code: ClientErrorCode;
  /** The request's frame type, when the error belongs to one. */
  readonly requestType: string | undefined;

  constructor(code: ClientErrorCode, message: string, requestType?: string) {
    super(message);
    this.name = "ClientError";
    this.code = code;
    this.requestType = requestType;
  }
}

/** True for a {@link ClientError}, optionally with the given code. */
export function isClientError(error: unknown, code?: ClientErrorCode): error is ClientError {
  return error instanceof ClientError && (code === undefined || error.code === code);
}
