/**
 * The errors the AI SDK reports, turned into {@link GatewayError}s whose message a user can act on.
 * @module
 */
import { GatewayError } from "chat-gateway/protocol";
import { abridge } from "../text.js";

/** The message of whatever was thrown or reported. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

/** Turns whatever the AI SDK reports into an error whose message a user can act on. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  // A RetryError wraps the attempts; the last one says what went wrong.
  const last = (error as { lastError?: unknown })?.lastError ?? error;
  const status = (last as { statusCode?: unknown })?.statusCode;
  const detail = abridge(messageOf(last), 300);
  if (typeof status === "number") {
    if (status === 401 || status === 403)
      return new GatewayError("internal", `The model provider refused the API key (HTTP ${status}): ${detail}`, {
        cause: error,
      });
    if (status === 429) {
      const headers = (last as { responseHeaders?: Record<string, string> }).responseHeaders ?? {};
      const retry = headers["retry-after"] ?? headers["Retry-After"];
      const seconds = retry !== undefined && /^\d+(\.\d+)?$/.test(retry.trim()) ? Math.ceil(Number(retry)) : undefined;
      return new GatewayError(
        "rate_limited",
        seconds === undefined
          ? `Rate limited by the model provider (HTTP 429); try again later: ${detail}`
          : `Rate limited by the model provider; retry after ${seconds} s: ${detail}`,
        { cause: error },
      );
    }
    if (status >= 500)
      return new GatewayError("internal", `The model provider failed (HTTP ${status}): ${detail}`, { cause: error });
    return new GatewayError("internal", `The model provider rejected the request (HTTP ${status}): ${detail}`, {
      cause: error,
    });
  }
  return new GatewayError("internal", `The model failed: ${detail}`, { cause: error });
}
