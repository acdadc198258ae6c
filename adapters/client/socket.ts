/**
 * The WebSocket the client drives: the browser's, or the `ws` package's in Node.
 * @module
 */

/** The part of the WebSocket API the client uses (the browser's, or the `ws` package's). */
export interface WebSocketLike {
  readonly readyState: number;
  readonly bufferedAmount: number;
  binaryType: string;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor: `new WebSocket(url)`, plus an options argument for `ws` (headers). */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers?: Record<string, string> },
) => WebSocketLike;
