/**
 * Helpers shared by the HTTP push senders (internal; not an entry point).
 * @module
 */
import { request as httpRequest, type Agent as HttpAgent } from "node:http";
import { request as httpsRequest } from "node:https";
import { PushSendError } from "chat-gateway";

/** 4xx answers cannot succeed on a retry, except 429, which asks for one later. */
export function isPermanentStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 429;
}

/** Cut `text` to at most `maxBytes` of UTF-8 on a character boundary, marking the cut with "…". */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const ellipsis = "…";
  let budget = maxBytes - Buffer.byteLength(ellipsis, "utf8");
  let out = "";
  for (const char of text) {
    budget -= Buffer.byteLength(char, "utf8");
    if (budget < 0) break;
    out += char;
  }
  return out + ellipsis;
}

/** A fetch failure's message; undici hides the useful part (ECONNREFUSED, timeout) in `cause`. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** The most of a push service's answer that is read; the rest is dropped with the connection. */
export const MAX_ANSWER_BYTES = 16 * 1024;

/** The bounds of {@link pushGate}. */
export interface InFlightLimits {
  /** Pushes in flight to one target (a subscription's endpoint, a topic, a token). */
  perTarget: number;
  /** Pushes in flight through one sender. */
  total: number;
}

/** Default {@link InFlightLimits}: a slow target holds two sockets at most, a sender 64. */
export const IN_FLIGHT_DEFAULTS: InFlightLimits = { perTarget: 2, total: 64 };

/** Check the in-flight options of a sender's options object; returns the limits to use. */
export function inFlightLimits(
  sender: string,
  options: { maxInFlight?: number; maxInFlightPerTarget?: number },
): InFlightLimits {
  for (const name of ["maxInFlight", "maxInFlightPerTarget"] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value < 1))
      throw new TypeError(`${sender}: \`${name}\` must be a whole number >= 1`);
  }
  return {
    perTarget: options.maxInFlightPerTarget ?? IN_FLIGHT_DEFAULTS.perTarget,
    total: options.maxInFlight ?? IN_FLIGHT_DEFAULTS.total,
  };
}

/**
 * Bounds the pushes a sender has in flight, per target and in all. A push over a bound is not
 * queued (a queue would be one more thing a slow target fills): it fails at once, not permanently,
 * so the gateway retries it later (docs/PROTOCOL.md §6) while pushes to other targets go on.
 */
export function pushGate(sender: string, limits: InFlightLimits) {
  const perTarget = new Map<string, number>();
  let total = 0;
  return async function run<T>(target: string, work: () => Promise<T>): Promise<T> {
    const here = perTarget.get(target) ?? 0;
    if (here >= limits.perTarget || total >= limits.total) {
      const which = here >= limits.perTarget ? `${limits.perTarget} to this target` : `${limits.total} in all`;
      throw new PushSendError(`${sender}: too many pushes in flight (${which}); retried later`, { permanent: false });
    }
    perTarget.set(target, here + 1);
    total++;
    try {
      return await work();
    } finally {
      total--;
      const left = (perTarget.get(target) ?? 1) - 1;
      if (left === 0) perTarget.delete(target);
      else perTarget.set(target, left);
    }
  };
}

/** A push service's answer: its status and at most {@link MAX_ANSWER_BYTES} of its body. */
export interface PushAnswer {
  status: number;
  ok: boolean;
  text: string;
}

/**
 * POST with `fetch` under one deadline that covers connecting, the headers and the body, reading
 * at most {@link MAX_ANSWER_BYTES} of the answer: a push service that answers an endless body, or
 * drips it, costs a few KiB and `timeoutMs`, never the process.
 */
export async function boundedFetch(
  fetchFn: typeof globalThis.fetch,
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<PushAnswer> {
  const deadline = new Deadline(timeoutMs);
  try {
    const response = await deadline.race(fetchFn(url, { ...init, signal: deadline.signal }));
    // Node's web streams are async iterable; the DOM typings do not say so.
    const text = await deadline.race(readCapped(response.body as AsyncIterable<Uint8Array> | null));
    return { status: response.status, ok: response.ok, text };
  } finally {
    deadline.clear();
  }
}

/**
 * POST with node:https (or node:http for an `http:` URL) under one deadline and with a capped
 * read, as {@link boundedFetch}; for senders that need an `Agent` (a socket lookup, a private CA).
 */
export function boundedRequest(
  url: URL,
  init: { headers: Record<string, string | number>; body: Buffer | string; agent?: HttpAgent },
  timeoutMs: number,
): Promise<PushAnswer> {
  const deadline = new Deadline(timeoutMs);
  const send = url.protocol === "http:" ? httpRequest : httpsRequest;
  const answer = new Promise<PushAnswer>((resolve, reject) => {
    const request = send(url, { method: "POST", headers: init.headers, agent: init.agent, signal: deadline.signal });
    request.once("error", reject);
    request.once("response", (response) => {
      const status = response.statusCode ?? 0;
      readCapped(response).then((text) => resolve({ status, ok: status >= 200 && status < 300, text }), reject);
    });
    request.end(init.body);
  });
  return deadline.race(answer).finally(() => deadline.clear());
}

/** At most {@link MAX_ANSWER_BYTES} of a body as text; the rest is not read (the stream is cancelled). */
async function readCapped(body: AsyncIterable<Uint8Array> | null): Promise<string> {
  if (body === null) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const iterator = body[Symbol.asyncIterator]();
  try {
    while (size < MAX_ANSWER_BYTES) {
      const next = await iterator.next();
      if (next.done) break;
      chunks.push(next.value);
      size += next.value.byteLength;
    }
  } finally {
    // Ends the stream (and its connection) when the answer was longer than the cap.
    await iterator.return?.();
  }
  return Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString("utf8");
}

/** One timer for a whole request: its signal aborts the request, `race` any await that ignores it. */
class Deadline {
  readonly #controller = new AbortController();
  readonly #expired: Promise<never>;
  readonly #timer: ReturnType<typeof setTimeout>;
  constructor(timeoutMs: number) {
    let expire: (error: Error) => void = () => undefined;
    this.#expired = new Promise<never>((_, reject) => {
      expire = reject;
    });
    // Nobody may be racing when it fires.
    this.#expired.catch(() => undefined);
    this.#timer = setTimeout(() => {
      const error = new Error(`no complete answer within ${timeoutMs} ms`);
      this.#controller.abort(error);
      expire(error);
    }, timeoutMs);
  }
  get signal(): AbortSignal {
    return this.#controller.signal;
  }
  race<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.#expired]);
  }
  clear(): void {
    clearTimeout(this.#timer);
  }
}
