/**
 * The one error type of chat-gateway. Its codes and what each means on each transport are the
 * protocol's (codes.ts of the protocol module, docs/PROTOCOL.md §8.1).
 * @module
 */

import { ERROR_CODES, type ErrorCode } from "./codes.js";

export { ERROR_CODES, CLOSE_CODES } from "./codes.js";
export type { ErrorCode } from "./codes.js";

/**
 * An error with one of the protocol's codes and a message a user can act on. Anything thrown
 * that is not a `GatewayError` is reported to clients as `internal`, without its message or stack.
 */
export class GatewayError extends Error {
  /** The protocol error code sent in the `error` frame. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GatewayError";
    this.code = code;
  }

  /** The HTTP status this error maps to. */
  get httpStatus(): number {
    return ERROR_CODES[this.code].httpStatus;
  }

  /** The WebSocket close code that follows this error, when the connection must end. */
  get closeCode(): number | undefined {
    return ERROR_CODES[this.code].closeCode;
  }
}

/** True for a {@link GatewayError}, also one from another copy of the package. */
export function isGatewayError(error: unknown): error is GatewayError {
  return (
    error instanceof GatewayError ||
    (error instanceof Error && error.name === "GatewayError" && typeof (error as GatewayError).code === "string")
  );
}

/** The `{code, message}` a client may see for any thrown value: internal details never leak. */
export function toWireError(error: unknown): { code: ErrorCode; message: string } {
  if (isGatewayError(error)) return { code: error.code, message: error.message };
  return { code: "internal", message: "internal error" };
}
