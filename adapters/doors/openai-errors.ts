/**
 * Errors in OpenAI's shape, `{"error": {"message", "type", "code"}}` (docs/PROTOCOL.md §19), and
 * the one place a gateway error becomes an HTTP status.
 * @module
 */
import type { ServerResponse } from "node:http";
import { isGatewayError } from "chat-gateway/protocol";
import { DoorUnavailable } from "./door-device.js";

/** A refusal a door answers with before or instead of a stream. */
export class DoorError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code: string | null = null,
    /** Seconds, for `Retry-After` on a 429 or 503. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** A 400 `invalid_request_error` naming what is wrong with the request. */
export function invalidRequest(message: string, code: string | null = null): DoorError {
  return new DoorError(400, "invalid_request_error", message, code);
}

/** Any thrown value as the refusal a client may see: nothing internal leaks. */
export function asDoorError(error: unknown): DoorError {
  if (error instanceof DoorError) return error;
  if (error instanceof URIError) return invalidRequest("the path is not a well-formed URL");
  if (error instanceof DoorUnavailable) return new DoorError(503, "server_error", error.message, "unavailable", 5);
  if (!isGatewayError(error)) return new DoorError(500, "server_error", "internal error", "internal");
  switch (error.code) {
    case "auth":
      return new DoorError(401, "authentication_error", error.message, "invalid_api_key");
    case "not_found":
      return new DoorError(404, "not_found_error", error.message, "not_found");
    case "rate_limited":
      return new DoorError(429, "rate_limit_error", error.message, "rate_limited", 1);
    case "media_too_large":
      return new DoorError(413, "invalid_request_error", error.message, "media_too_large");
    case "unsupported":
      return invalidRequest(error.message, "unsupported");
    default:
      return new DoorError(500, "server_error", "internal error", "internal");
  }
}

/** The error body, as OpenAI's clients parse it. */
export function errorBody(error: DoorError): { error: { message: string; type: string; code: string | null } } {
  return { error: { message: error.message, type: error.type, code: error.code } };
}

/** Answers the refusal, unless the answer already started (a stream reports errors in-band). */
export function sendError(res: ServerResponse, thrown: unknown): void {
  const error = asDoorError(thrown);
  if (res.headersSent) {
    res.end();
    return;
  }
  const headers: Record<string, string> = { "content-type": "application/json", "cache-control": "no-store" };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  res.writeHead(error.status, headers).end(JSON.stringify(errorBody(error)));
}

/** A JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
}
