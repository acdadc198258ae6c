/**
 * Server-sent events for a door's stream: `data:` lines, a `: keep-alive` comment when a stream
 * has been quiet, and a bound on what a client that stops reading can make the process hold.
 * @module
 */
import type { ServerResponse } from "node:http";

/** Bytes a stream may have waiting for a client that does not read; past it the stream is cut. */
export const MAX_UNREAD_BYTES = 1 << 20;

/** One response's event stream. */
export class EventStream {
  readonly #res: ServerResponse;
  readonly #keepAliveMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #ended = false;

  constructor(res: ServerResponse, keepAliveMs: number, headers: Record<string, string> = {}) {
    this.#res = res;
    this.#keepAliveMs = keepAliveMs;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      ...headers,
    });
    res.flushHeaders();
    res.once("close", () => this.#stop());
    this.#arm();
  }

  /** Whether the client can still be written to. */
  get open(): boolean {
    return !this.#ended && !this.#res.destroyed;
  }

  /** One `data:` event with a JSON value (or a plain string such as `[DONE]`). */
  data(value: unknown): void {
    this.#write(`data: ${typeof value === "string" ? value : JSON.stringify(value)}\n\n`);
  }

  /** One event with a name and JSON data. */
  event(name: string, value: unknown): void {
    this.#write(`event: ${name}\ndata: ${JSON.stringify(value)}\n\n`);
  }

  /** Ends the response. */
  end(): void {
    if (!this.open) return;
    this.#stop();
    this.#res.end();
  }

  #write(text: string): void {
    if (!this.open) return;
    if (this.#res.writableLength > MAX_UNREAD_BYTES) {
      // A client that stopped reading: cut it rather than hold its backlog; the turn goes on.
      this.#stop();
      this.#res.destroy();
      return;
    }
    this.#res.write(text);
    this.#arm();
  }

  #arm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#write(": keep-alive\n\n"), this.#keepAliveMs);
    this.#timer.unref?.();
  }

  #stop(): void {
    this.#ended = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
