/**
 * Bounds on what the model server sends back. The server is not trusted to end a line, an event
 * or a body: each is counted as its bytes arrive, before anything buffers them; nor to answer in
 * the type that was asked for: an answer of another type is refused before it is read.
 * @module
 */
import { GatewayError } from "chat-gateway/protocol";
import { abridge } from "../text.js";

/** Default largest server-sent event, bytes. An OpenAI chunk is a few hundred bytes. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;
/** Default largest response body of one model call, bytes. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** Of an error body only the start is reported, so only the start is read. */
export const ERROR_BODY_BYTES = 64 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts a streamed SSE body: its total bytes and the bytes of the event being received (its
 * lines up to the blank line that ends it). The parser buffers an unfinished line and the data
 * lines of an unfinished event, so bounding the event bounds what it holds.
 */
export class SseMeter {
  readonly #maxEvent: number;
  readonly #maxBody: number;
  #body = 0;
  #event = 0;
  #line = 0;
  #afterCR = false;

  constructor(maxEventBytes: number, maxBodyBytes: number) {
    this.#maxEvent = maxEventBytes;
    this.#maxBody = maxBodyBytes;
  }

  /** Counts the next bytes; throws a {@link GatewayError} once a bound is passed. */
  add(bytes: Uint8Array): void {
    this.#body += bytes.byteLength;
    if (this.#body > this.#maxBody) throw responseTooLarge(this.#maxBody);
    if (this.#afterCR || bytes.indexOf(CR) !== -1) this.#addBytewise(bytes);
    else this.#addLines(bytes);
  }

  /** The common case, LF line ends only: jumps from one to the next. */
  #addLines(bytes: Uint8Array): void {
    let start = 0;
    for (let end = bytes.indexOf(LF); end !== -1; end = bytes.indexOf(LF, start)) {
      const line = this.#line + end - start;
      this.#event = line === 0 ? 0 : this.#event + end - start;
      if (this.#event > this.#maxEvent) throw eventTooLarge(this.#maxEvent);
      this.#line = 0;
      start = end + 1;
    }
    this.#line += bytes.length - start;
    this.#event += bytes.length - start;
    if (this.#event > this.#maxEvent) throw eventTooLarge(this.#maxEvent);
  }

  #addBytewise(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i];
      if (byte === LF || byte === CR) {
        // CR LF is one line end, as in the SSE grammar; split across reads it is still one.
        if (byte === LF && this.#afterCR) {
          this.#afterCR = false;
          continue;
        }
        this.#afterCR = byte === CR;
        if (this.#line === 0) this.#event = 0;
        this.#line = 0;
      } else {
        this.#afterCR = false;
        this.#line++;
        if (++this.#event > this.#maxEvent) throw eventTooLarge(this.#maxEvent);
      }
    }
  }
}

/**
 * Reads a body as text, at most `maxBytes` of it. Past that it stops reading, cancels the body
 * (which aborts the request) and returns what it has with `complete: false`.
 */
export async function readBoundedText(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; complete: boolean }> {
  if (!response.body) return { text: "", complete: true };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: text + decoder.decode(), complete: true };
      const room = maxBytes - size;
      if (value.byteLength > room) return { text: text + decoder.decode(value.subarray(0, room)), complete: false };
      size += value.byteLength;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/**
 * The media type of an OK answer when it is one of `accepted` (lower case, without parameters; ""
 * when the server named none, as some minimal servers do). Anything else, such as the HTML page of
 * a web UI at a wrong base URL, is not read: its body is cancelled and the error says what the
 * server answered (its media type only, since parameters may carry anything).
 * @param expected what was asked for, in words: "an event stream"
 * @throws {GatewayError} `internal` for any other content type
 */
export async function acceptedType(response: Response, accepted: readonly string[], expected: string): Promise<string> {
  const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (accepted.includes(type)) return type;
  await response.body?.cancel().catch(() => undefined);
  const shown = /^[\w.+-]+\/[\w.+-]+$/.test(type) ? abridge(type, 100) : "a malformed content type";
  throw new GatewayError(
    "internal",
    `The model server answered ${shown}, not ${expected}; check that the base URL is its API (often ending in /v1)`,
  );
}

/** The error of a response body past `maxBytes`. */
export function responseTooLarge(maxBytes: number): GatewayError {
  return new GatewayError(
    "internal",
    `The model server's response passed the ${formatBytes(maxBytes)} limit; the request was aborted and the answer is incomplete`,
  );
}

function eventTooLarge(maxBytes: number): GatewayError {
  return new GatewayError(
    "internal",
    `The model server sent a stream event (or a line without end) over the ${formatBytes(maxBytes)} limit; the request was aborted and the answer is incomplete`,
  );
}

/** 1048576 -> "1 MiB", 65536 -> "64 KiB", 1000 -> "1000 bytes". */
function formatBytes(bytes: number): string {
  const round = (n: number) => Math.round(n * 10) / 10;
  if (bytes >= 1024 * 1024) return `${round(bytes / (1024 * 1024))} MiB`;
  if (bytes >= 1024) return `${round(bytes / 1024)} KiB`;
  return `${bytes} bytes`;
}

/** A positive whole number of bytes, or the default; anything else is a configuration error. */
export function byteLimit(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1)
    throw new TypeError(`openAICompatibleRuntime: ${name} must be a whole number of bytes >= 1, got ${String(value)}`);
  return value;
}
