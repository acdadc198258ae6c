/**
 * The gateway's retry hint: a hello it shed because too many were in progress is closed 1013 with
 * the reason `retry_after_ms=<n>`, an upgrade it shed before taking it is answered HTTP 503 with
 * the header `Retry-After-Ms: <n>` (docs/PROTOCOL.md §18.5). The client comes back after it,
 * spread by a jitter, so the devices it shed together do not return together.
 * @module
 */
import type { WebSocketLike } from "./socket.js";

/** The longest hint honoured (ms): a gateway cannot park a client for longer than this. */
const MAX_HINT_MS = 60_000;

/** The hint of a close, in milliseconds, or undefined when it carries none. */
export function retryHint(code: number, reason: string): number | undefined {
  if (code !== 1013) return undefined;
  const match = /^retry_after_ms=(\d{1,9})$/.exec(reason);
  return match ? Math.min(Number(match[1]), MAX_HINT_MS) : undefined;
}

/** The hint of a refused upgrade's `Retry-After-Ms` header, or undefined when it carries none. */
export function headerHint(value: string | string[] | undefined): number | undefined {
  const match = typeof value === "string" ? /^\s*(\d{1,9})\s*$/.exec(value) : null;
  return match ? Math.min(Number(match[1]), MAX_HINT_MS) : undefined;
}

/** The part of the `ws` package's client that shows a refused upgrade's response. */
interface NodeSocket {
  on(
    event: "unexpected-response",
    listener: (
      request: unknown,
      response: { statusCode?: number; headers: Record<string, string | string[] | undefined>; resume(): void },
    ) => void,
  ): unknown;
  terminate(): void;
}

/**
 * With the `ws` package, `refused` hears the status and the hint of an upgrade the server answered
 * with something other than 101; the socket then closes (1006) as `ws` closes it by itself. The
 * browser's WebSocket shows neither, so there the client falls back to its backoff.
 */
export function watchRefusedUpgrade(
  ws: WebSocketLike,
  refused: (status: number, hintMs: number | undefined) => void,
): void {
  const socket = ws as Partial<NodeSocket>;
  if (typeof socket.on !== "function" || typeof socket.terminate !== "function") return;
  socket.on("unexpected-response", (_request, response) => {
    refused(response.statusCode ?? 0, headerHint(response.headers["retry-after-ms"]));
    response.resume();
    socket.terminate?.();
  });
}

/** The wait for a hint: at least the hint, plus up to half of it again at random. */
export function hintedDelay(hintMs: number): number {
  return Math.round(hintMs * (1 + Math.random() / 2));
}
