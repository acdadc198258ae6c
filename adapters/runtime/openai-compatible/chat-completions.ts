/**
 * The client of one Chat Completions call: the request under a silence timeout and the caller's
 * signal, the streamed (or whole JSON) response read within its byte bounds, and every failure
 * turned into a {@link GatewayError} whose message a user can act on.
 * @module
 */
import { createParser } from "eventsource-parser";
import { GatewayError } from "chat-gateway/protocol";
import type { RuntimeEvent } from "chat-gateway";
import { abridge } from "../text.js";
import { applyChunk, finishToolCalls, parseChunk } from "./chunks.js";
import type { PartialCalls, StepResult } from "./chunks.js";
import { acceptedType, ERROR_BODY_BYTES, readBoundedText, responseTooLarge, SseMeter } from "./response-limits.js";

/** What the client needs to reach the server. */
export interface ClientConfig {
  /** `<baseUrl>/chat/completions`. */
  url: string;
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  maxEventBytes: number;
  maxResponseBytes: number;
  fetch: typeof fetch;
}

/** A request in flight, bounded by `timeoutMs` of silence and by the caller's signal. */
export interface GuardedRequest {
  signal: AbortSignal;
  /** True once the silence timeout aborted the request, to tell it from a caller's abort. */
  state: { timedOut: boolean };
  /** Restarts the silence clock. */
  touch(): void;
  /** Stops the silence clock. */
  pause(): void;
  dispose(): void;
}

/** Guards one request: see {@link GuardedRequest}. */
export function guardedRequest(cfg: ClientConfig, signal: AbortSignal): GuardedRequest {
  const controller = new AbortController();
  const state = { timedOut: false };
  let timer: NodeJS.Timeout | undefined;
  const touch = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      state.timedOut = true;
      controller.abort(new Error("timeout"));
    }, cfg.timeoutMs);
  };
  // While the consumer holds a yielded event, the server is not the one being slow.
  const pause = () => clearTimeout(timer);
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  if (signal.aborted) controller.abort(signal.reason);
  return {
    signal: controller.signal,
    state,
    touch,
    pause,
    dispose() {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    },
  };
}

/** One model call in progress: what a failure needs to be told apart and put in words. */
interface Exchange {
  cfg: ClientConfig;
  signal: AbortSignal;
  guard: GuardedRequest;
  phase: "connect" | "stream";
}

/** The error a transport failure means, or undefined when the caller aborted (not a failure). */
function transportFailure(x: Exchange, error: unknown): GatewayError | undefined {
  if (x.signal.aborted) return undefined;
  if (x.guard.state.timedOut) {
    const seconds = Math.round(x.cfg.timeoutMs / 100) / 10;
    return new GatewayError(
      "internal",
      x.phase === "connect"
        ? `The model server did not answer within ${seconds} s`
        : `The model server stopped sending for ${seconds} s; the answer is incomplete`,
      { cause: error },
    );
  }
  if (x.phase === "connect") {
    const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
    const why = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
    // fetch's own reason may quote the URL it was given.
    const shown = shownUrl(x.cfg.baseUrl);
    const reason = why.split(x.cfg.baseUrl).join(shown);
    return new GatewayError("internal", `Could not reach the model server at ${shown} (${reason})`, { cause: error });
  }
  return new GatewayError(
    "internal",
    "The connection to the model server dropped mid-answer; the answer is incomplete",
    { cause: error },
  );
}

/** Throws the failure `error` means; returns when the caller aborted. */
function throwUnlessAborted(x: Exchange, error: unknown): void {
  const e = transportFailure(x, error);
  if (e) throw e;
}

/**
 * Runs one streamed model call: yields its text and reasoning as they arrive and returns the
 * whole step. Throws a {@link GatewayError} on a failure; an abort by `signal` returns a result
 * marked `aborted`.
 */
export async function* streamStep(
  cfg: ClientConfig,
  body: Record<string, unknown>,
  signal: AbortSignal,
  separator: string,
): AsyncGenerator<RuntimeEvent, StepResult> {
  const result: StepResult = { separator, text: "", toolCalls: [], aborted: false };
  const calls: PartialCalls = new Map();
  const x: Exchange = { cfg, signal, guard: guardedRequest(cfg, signal), phase: "connect" };
  try {
    const response = await connect(x, body);
    if (response === undefined) return { ...result, aborted: true };
    x.phase = "stream";
    if (!response.body) throw new GatewayError("internal", "The model server sent an empty response");
    const kind = await answerKind(response);
    const pending: string[] = [];
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    if (kind === "json") {
      // Some servers ignore `stream: true` (or answer errors as JSON with status 200).
      const whole = await readJsonAnswer(x, response);
      if (whole === undefined) return { ...result, aborted: true };
      pending.push(whole);
    } else {
      reader = response.body.getReader();
    }
    const complete = yield* readEvents(x, reader, pending, result, calls);
    if (!complete) return { ...result, aborted: true };
  } finally {
    x.guard.dispose();
  }
  result.toolCalls = finishToolCalls(calls);
  return result;
}

/** The types a streamed call's OK answer may have. */
const STEP_TYPES = ["application/json", "text/event-stream", ""];

/**
 * How an OK answer is read: as a whole JSON answer, or as an event stream (also when the server
 * names no type). Anything else would read as a stream with no event in it, which looks like a
 * dropped connection: it is refused saying what the server answered.
 * @throws {GatewayError} `internal` for any other content type
 */
async function answerKind(response: Response): Promise<"json" | "stream"> {
  const type = await acceptedType(response, STEP_TYPES, "an event stream");
  return type === "application/json" ? "json" : "stream";
}

/** Sends the request; resolves with an OK response, or undefined when the caller aborted. */
async function connect(x: Exchange, body: Record<string, unknown>): Promise<Response | undefined> {
  x.guard.touch();
  let response: Response;
  try {
    response = await x.cfg.fetch(x.cfg.url, {
      method: "POST",
      headers: x.cfg.headers,
      body: JSON.stringify(body),
      signal: x.guard.signal,
    });
    x.guard.pause();
  } catch (error) {
    throwUnlessAborted(x, error);
    return undefined;
  }
  if (!response.ok) {
    let text = "";
    try {
      x.guard.touch();
      text = (await readBoundedText(response, ERROR_BODY_BYTES)).text;
    } catch {
      // The status alone is enough to report.
    }
    if (x.signal.aborted) return undefined;
    throw httpError(response, text);
  }
  return response;
}

/** A whole JSON answer as the one chunk of a stream, or undefined when the caller aborted. */
async function readJsonAnswer(x: Exchange, response: Response): Promise<string | undefined> {
  x.guard.touch();
  let read: { text: string; complete: boolean };
  try {
    read = await readBoundedText(response, x.cfg.maxResponseBytes);
  } catch (error) {
    throwUnlessAborted(x, error);
    return undefined;
  }
  if (!read.complete) throw responseTooLarge(x.cfg.maxResponseBytes);
  const json = parseChunk(read.text);
  const choice = (json.choices as Array<Record<string, unknown>> | undefined)?.[0];
  return JSON.stringify({ ...json, choices: choice ? [{ ...choice, delta: choice.message ?? choice.delta }] : [] });
}

/**
 * Yields the events of the `pending` chunks, then of the stream's, until `[DONE]` or its end.
 * Returns false when the caller aborted. Without a reader only `pending` is read.
 */
async function* readEvents(
  x: Exchange,
  reader: ReadableStreamDefaultReader<Uint8Array> | undefined,
  pending: string[],
  result: StepResult,
  calls: PartialCalls,
): AsyncGenerator<RuntimeEvent, boolean> {
  let sawDone = reader === undefined;
  let sawFinish = false;
  const parser = createParser({
    onEvent(event) {
      if (event.data.trim() === "[DONE]") sawDone = true;
      else if (!sawDone) pending.push(event.data);
    },
  });
  const decoder = new TextDecoder();
  const meter = new SseMeter(x.cfg.maxEventBytes, x.cfg.maxResponseBytes);
  // Parsed one at a time so that text before a malformed chunk is still yielded.
  const drain = function* (): Generator<RuntimeEvent> {
    for (const data of pending.splice(0)) {
      const chunk = parseChunk(data);
      yield* applyChunk(chunk, result, calls);
      if ((chunk.choices as Array<{ finish_reason?: unknown }> | undefined)?.some((c) => c?.finish_reason))
        sawFinish = true;
    }
  };
  try {
    while (true) {
      yield* drain();
      if (sawDone || !reader) return true;
      x.guard.touch();
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
        x.guard.pause();
      } catch (error) {
        throwUnlessAborted(x, error);
        return false;
      }
      if (read.done) {
        parser.feed(`${decoder.decode()}\n\n`);
        yield* drain();
        // A clean end without `[DONE]` is fine once the model said why it stopped.
        if (!sawDone && !sawFinish) throwUnlessAborted(x, new Error("stream ended before [DONE]"));
        return sawDone || sawFinish;
      }
      // Counted before the parser sees them: it would buffer a line that never ends, whole.
      meter.add(read.value);
      parser.feed(decoder.decode(read.value, { stream: true }));
    }
  } finally {
    // Release the connection when we stop early (an error, an abort, or `[DONE]` before the end).
    reader?.cancel().catch(() => {});
  }
}

/** The error an HTTP error status means, with the server's own message when it gave one. */
export function httpError(response: Response, body: string): GatewayError {
  const status = response.status;
  let detail = body;
  try {
    const json = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof json.error === "string" ? json.error : (json.error?.message ?? json.message);
    if (typeof m === "string") detail = m;
  } catch {
    // Not JSON: the body itself is the detail.
  }
  detail = abridge(detail, 300);
  const suffix = detail ? `: ${detail}` : "";
  if (status === 401 || status === 403) {
    return new GatewayError("internal", `The model server refused the API key (HTTP ${status})${suffix}`);
  }
  if (status === 429) {
    const seconds = retryAfterSeconds(response.headers.get("retry-after"));
    return new GatewayError(
      "rate_limited",
      seconds === undefined
        ? `Rate limited by the model server (HTTP 429); try again later${suffix}`
        : `Rate limited by the model server; retry after ${seconds} s${suffix}`,
    );
  }
  if (status === 404)
    return new GatewayError("internal", `The model server has no such model or endpoint (HTTP 404)${suffix}`);
  if (status >= 500) return new GatewayError("internal", `The model server failed (HTTP ${status})${suffix}`);
  return new GatewayError("internal", `The model server rejected the request (HTTP ${status})${suffix}`);
}

function retryAfterSeconds(header: string | null): number | undefined {
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Math.ceil(Number(header));
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/**
 * The base URL as a device may see it: without a user, password or query, which may hold a key
 * (the message goes to the person's devices and the log).
 */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(the configured URL)";
  }
}
