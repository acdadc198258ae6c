/**
 * An {@link AgentRuntime} that talks to any server speaking the OpenAI Chat Completions API with
 * streaming: OpenAI, OpenRouter, llama.cpp's `llama-server`, vLLM, Ollama, LM Studio, DeepSeek…
 *
 * It streams text and reasoning (`reasoning_content` or `reasoning`), assembles streamed tool
 * calls, runs them through the tools you pass, and loops until the model answers without calling
 * a tool. No SDK: one `fetch` per model call and an SSE parser.
 *
 * How a turn fails: a refused key, a rate limit, a server error, a connection dropped mid-answer,
 * a malformed chunk, a timeout, or a response past `maxEventBytes` or `maxResponseBytes` ends the
 * turn by throwing a {@link GatewayError} whose message says what happened in words a user can act
 * on (for example "Rate limited by the model server; retry after 20 s"). Text that had already
 * arrived has been yielded by then, so the gateway keeps it. An abort through `input.signal`
 * (`/stop`, or a gateway limit) is not a failure: the turn just ends.
 *
 * @example
 * ```ts
 * import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
 *
 * const runtime = openAICompatibleRuntime({
 *   baseUrl: "http://127.0.0.1:8080/v1", // llama-server
 *   model: "qwen3-8b",
 *   tools: {
 *     clock: {
 *       description: "The current time, ISO 8601",
 *       parameters: { type: "object", properties: {} },
 *       execute: () => new Date().toISOString(),
 *     },
 *   },
 * });
 * ```
 * @module
 */
import { randomUUID } from "node:crypto";
import { createParser } from "eventsource-parser";
import { GatewayError } from "chat-gateway";
import type { AgentRuntime, CommandEntry, CommandInput, RuntimeEvent, TurnInput, UsageEvent } from "chat-gateway";
import { byteLimit, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, ERROR_BODY_BYTES, readBoundedText, responseTooLarge, SseMeter } from "./response-limits.js";

/**
 * A tool the model may call. `parameters` is the JSON schema of its arguments, sent to the model
 * as is.
 *
 * @example
 * ```ts
 * const weather: OpenAICompatibleTool = {
 *   description: "Current weather for a city",
 *   parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
 *   execute: async ({ city }, { signal }) => (await fetch(`https://wttr.in/${city}?format=3`, { signal })).text(),
 *   preview: ({ city }) => `weather in ${city}`,
 * };
 * ```
 */
export interface OpenAICompatibleTool {
  description?: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
  /**
   * Runs the call. Return a string or any JSON value (sent to the model as JSON). Throwing reports
   * the call as failed (`ok: false`), gives the model the error message as the result, and the
   * turn goes on. `signal` aborts when the turn is stopped.
   */
  execute(args: Record<string, unknown>, context: { signal: AbortSignal; toolCallId: string }): unknown;
  /** One-line summary of a call for the tool progress line. Default: the arguments, abridged. */
  preview?(args: Record<string, unknown>): string;
}

/**
 * Prices of a model, USD per million tokens, used to report a turn's cost when the server does not.
 *
 * @example
 * ```ts
 * const prices: ModelPrices = { input: 0.15, output: 0.6 }; // gpt-4o-mini
 * ```
 */
export interface ModelPrices {
  input: number;
  output: number;
}

/**
 * Options of {@link openAICompatibleRuntime}.
 *
 * @example
 * ```ts
 * const options: OpenAICompatibleRuntimeOptions = {
 *   baseUrl: "https://openrouter.ai/api/v1",
 *   apiKey: process.env.OPENROUTER_API_KEY,
 *   model: "deepseek/deepseek-chat",
 *   contextWindow: 128_000,
 * };
 * ```
 */
export interface OpenAICompatibleRuntimeOptions {
  /** The API root, the part before `/chat/completions`, for example `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. Local servers usually need none. */
  apiKey?: string;
  /** Model id as the server names it. */
  model: string;
  /** System message put before the history. */
  systemPrompt?: string;
  /** Tools the model may call, by name. */
  tools?: Record<string, OpenAICompatibleTool>;
  /**
   * Model calls per turn, at least 1. Default 10. When the model still asks for tools on the last
   * one, those calls are not run and the turn ends with a `commentary` saying so.
   */
  maxSteps?: number;
  /**
   * How long to wait for the server's response, and then for each next piece of the stream,
   * milliseconds. Default 60 000. It bounds silence, not the length of an answer: a long answer
   * that keeps streaming is never cut.
   */
  timeoutMs?: number;
  /**
   * Largest server-sent event, bytes: a `data:` line, or the lines up to the blank line that ends
   * an event (default 1 MiB; a chunk is usually under 1 KiB). A server that sends more, or a line
   * that never ends, has its request aborted and the turn fails saying so: nothing buffers more.
   */
  maxEventBytes?: number;
  /**
   * Largest response body of one model call, bytes (default 32 MiB), streamed or JSON. Past it the
   * request is aborted and the turn fails saying so. Streamed chunks cost about 200 bytes of JSON per
   * token, so the default passes about 150,000 tokens: more than the gateway's `maxAnswerChars`
   * (256 Ki characters, about 64,000 tokens), which ends an ordinary long answer first. Of an error
   * response only the first 64 KiB are read.
   */
  maxResponseBytes?: number;
  /** Extra request headers (OpenRouter's `HTTP-Referer`, a proxy's key…). */
  headers?: Record<string, string>;
  /**
   * Extra fields merged into every request body: `temperature`, `max_tokens`, `provider`…
   * `{ stream_options: undefined }` drops the usage request for a server that rejects it.
   */
  body?: Record<string, unknown>;
  /** The `fetch` to use. Default: the global one. */
  fetch?: typeof fetch;
  /** Context window of the model, tokens; reported with the usage so the footer shows `context_pct`. */
  contextWindow?: number;
  /** Prices for the cost in the footer. Ignored when the server reports a cost itself (OpenRouter). */
  prices?: ModelPrices;
  /**
   * Send image attachments to the model as `image_url` parts (the model must accept images).
   * Default false: attachments are described to the model by a line of text.
   */
  vision?: boolean;
  /** Offer `generateTitle` for auto-threads. Default true. */
  generateTitle?: boolean;
  /** Model for titles, for example a cheaper one. Default: `model`. */
  titleModel?: string;
}

interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null | Array<Record<string, unknown>>;
  tool_calls?: ToolCallWire[];
  tool_call_id?: string;
}

interface ToolCallWire {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

interface StepUsage {
  prompt?: number;
  completion?: number;
  total?: number;
  cost?: number;
}

interface StepResult {
  /** Put before this step's first text: the answer so far already has text from an earlier step. */
  separator: string;
  text: string;
  toolCalls: ToolCallWire[];
  usage?: StepUsage;
  model?: string;
  finishReason?: string;
  aborted: boolean;
}

interface Config {
  url: string;
  baseUrl: string;
  headers: Record<string, string>;
  model: string;
  systemPrompt?: string;
  tools: Record<string, OpenAICompatibleTool>;
  maxSteps: number;
  timeoutMs: number;
  maxEventBytes: number;
  maxResponseBytes: number;
  body: Record<string, unknown>;
  fetch: typeof fetch;
  contextWindow?: number;
  prices?: ModelPrices;
  vision: boolean;
  titleModel: string;
}

const COMMANDS: CommandEntry[] = [
  { name: "/model", description: "Show the model answering in this chat", args_hint: "", category: "Info", aliases: [] },
  { name: "/tools", description: "List the tools the model can call", args_hint: "", category: "Tools & Skills", aliases: [] },
];

/**
 * Creates a runtime backed by an OpenAI-compatible streaming Chat Completions endpoint.
 * Misconfiguration throws a `TypeError` here, not on the first turn.
 *
 * @example
 * ```ts
 * const runtime = openAICompatibleRuntime({
 *   baseUrl: "https://api.openai.com/v1",
 *   apiKey: process.env.OPENAI_API_KEY,
 *   model: "gpt-4o-mini",
 *   systemPrompt: "You are terse.",
 *   contextWindow: 128_000,
 *   prices: { input: 0.15, output: 0.6 },
 * });
 * const gateway = createGateway({ storage: memoryStorage(), runtime });
 * ```
 */
export function openAICompatibleRuntime(options: OpenAICompatibleRuntimeOptions): AgentRuntime {
  if (!options || typeof options.baseUrl !== "string" || !/^https?:\/\//.test(options.baseUrl)) {
    throw new TypeError("openAICompatibleRuntime: baseUrl must be an http(s) URL, e.g. http://127.0.0.1:8080/v1");
  }
  if (typeof options.model !== "string" || options.model === "") {
    throw new TypeError("openAICompatibleRuntime: model is required");
  }
  const maxSteps = options.maxSteps ?? 10;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new TypeError("openAICompatibleRuntime: maxSteps must be an integer >= 1");
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!(timeoutMs > 0)) throw new TypeError("openAICompatibleRuntime: timeoutMs must be > 0");
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== "function") throw new TypeError("openAICompatibleRuntime: no fetch available; pass options.fetch");
  for (const [name, tool] of Object.entries(options.tools ?? {})) {
    if (typeof tool?.execute !== "function") throw new TypeError(`openAICompatibleRuntime: tool "${name}" has no execute function`);
  }

  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const cfg: Config = {
    url: `${baseUrl}/chat/completions`,
    baseUrl,
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream, application/json",
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      ...options.headers,
    },
    model: options.model,
    systemPrompt: options.systemPrompt,
    tools: options.tools ?? {},
    maxSteps,
    timeoutMs,
    maxEventBytes: byteLimit("maxEventBytes", options.maxEventBytes, DEFAULT_MAX_EVENT_BYTES),
    maxResponseBytes: byteLimit("maxResponseBytes", options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES),
    body: options.body ?? {},
    fetch: fetchImpl,
    contextWindow: options.contextWindow,
    prices: options.prices,
    vision: options.vision ?? false,
    titleModel: options.titleModel ?? options.model,
  };

  const runtime: AgentRuntime = {
    model: options.model,
    turn: (input) => runTurn(cfg, input),
    commands: () => COMMANDS.map((c) => ({ ...c, aliases: [...c.aliases] })),
    command: (input) => runCommand(cfg, input),
  };
  if (options.generateTitle !== false) runtime.generateTitle = (text, signal) => generateTitle(cfg, text, signal);
  return runtime;
}

async function* runCommand(cfg: Config, input: CommandInput): AsyncGenerator<RuntimeEvent> {
  if (input.command === "/model") {
    yield { type: "text", delta: `Model: ${cfg.model}` };
  } else if (input.command === "/tools") {
    const names = Object.keys(cfg.tools);
    yield {
      type: "text",
      delta: names.length === 0 ? "No tools." : names.map((n) => `- ${n}${cfg.tools[n].description ? `: ${cfg.tools[n].description}` : ""}`).join("\n"),
    };
  } else {
    yield { type: "text", delta: `Unknown command ${input.command}` };
  }
}

async function* runTurn(cfg: Config, input: TurnInput): AsyncGenerator<RuntimeEvent> {
  const messages = await buildMessages(cfg, input);
  const toolSpecs = Object.entries(cfg.tools).map(([name, tool]) => ({
    type: "function",
    function: { name, description: tool.description ?? "", parameters: tool.parameters },
  }));
  const totals = { prompt: undefined as number | undefined, completion: 0, total: 0, cost: 0, costKnown: false };
  let answered = false;

  for (let step = 1; ; step++) {
    if (input.signal.aborted) return;
    const body: Record<string, unknown> = {
      model: cfg.model,
      messages,
      ...(toolSpecs.length > 0 ? { tools: toolSpecs } : {}),
      stream_options: { include_usage: true },
      ...cfg.body,
      stream: true,
    };
    // The gateway joins all text into one answer; text before and after a tool call would run together.
    const result: StepResult = yield* streamStep(cfg, body, input.signal, answered ? "\n\n" : "");
    answered ||= result.text !== "";
    if (result.aborted) return;
    yield usageEvent(cfg, totals, result);
    if (result.finishReason === "length") {
      yield { type: "commentary", text: "The answer was cut off at the model's output limit." };
    }
    if (result.toolCalls.length === 0) return;
    if (step >= cfg.maxSteps) {
      yield {
        type: "commentary",
        text: `Stopped after ${cfg.maxSteps} model calls: the model still wanted to call ${result.toolCalls.map((c) => c.function.name).join(", ")}.`,
      };
      return;
    }
    messages.push({ role: "assistant", content: result.text === "" ? null : result.text, tool_calls: result.toolCalls });
    for (const call of result.toolCalls) {
      const outcome = yield* runTool(cfg, call, input.signal);
      if (outcome === undefined) return;
      messages.push({ role: "tool", tool_call_id: call.id, content: outcome });
    }
  }
}

/** Runs one call; yields its start and end; returns what the model gets, or undefined when aborted. */
async function* runTool(cfg: Config, call: ToolCallWire, signal: AbortSignal): AsyncGenerator<RuntimeEvent, string | undefined> {
  const name = call.function.name;
  const tool = Object.hasOwn(cfg.tools, name) ? cfg.tools[name] : undefined;
  let args: Record<string, unknown>;
  let badArgs: string | undefined;
  try {
    const parsed: unknown = call.function.arguments.trim() === "" ? {} : JSON.parse(call.function.arguments);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not a JSON object");
    args = parsed as Record<string, unknown>;
  } catch {
    args = { arguments: call.function.arguments };
    badArgs = `Invalid arguments for ${name}: expected a JSON object, got ${abridge(call.function.arguments, 200)}`;
  }
  yield { type: "tool-start", id: call.id, name, args, preview: previewOf(tool, name, args) };

  const started = performance.now();
  const end = (output: unknown, ok: boolean): RuntimeEvent => ({
    type: "tool-end",
    id: call.id,
    name,
    output,
    ok,
    duration: (performance.now() - started) / 1000,
  });
  if (badArgs !== undefined || tool === undefined) {
    const message = badArgs ?? `Unknown tool: ${name}`;
    yield end(message, false);
    return `Error: ${message}`;
  }
  const settled = await untilAborted(
    Promise.resolve()
      .then(() => tool.execute(args, { signal, toolCallId: call.id }))
      .then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, value: error instanceof Error ? error.message : String(error) }),
      ),
    signal,
  );
  if (settled === undefined) return undefined;
  if (!settled.ok) {
    yield end(settled.value, false);
    return `Error: ${settled.value}`;
  }
  if (typeof settled.value === "string") {
    yield end(settled.value, true);
    return settled.value;
  }
  let json: string;
  try {
    json = JSON.stringify(settled.value ?? null);
  } catch {
    // Not JSON (a cycle, a BigInt): the frame and the model both get its text form.
    json = String(settled.value);
    yield end(json, true);
    return json;
  }
  yield end(settled.value, true);
  return json;
}

function previewOf(tool: OpenAICompatibleTool | undefined, name: string, args: Record<string, unknown>): string {
  if (tool?.preview) {
    try {
      return tool.preview(args);
    } catch {
      // A broken preview must not fail the call; fall back to the generic one.
    }
  }
  const parts = Object.entries(args).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return abridge(`${name}(${parts.join(", ")})`, 120);
}

function usageEvent(cfg: Config, totals: { prompt?: number; completion: number; total: number; cost: number; costKnown: boolean }, step: StepResult): UsageEvent {
  const u = step.usage;
  if (u) {
    if (u.prompt !== undefined) totals.prompt = u.prompt;
    totals.completion += u.completion ?? 0;
    totals.total += u.total ?? (u.prompt ?? 0) + (u.completion ?? 0);
    if (u.cost !== undefined) {
      totals.cost += u.cost;
      totals.costKnown = true;
    } else if (cfg.prices) {
      totals.cost += ((u.prompt ?? 0) * cfg.prices.input + (u.completion ?? 0) * cfg.prices.output) / 1e6;
      totals.costKnown = true;
    }
  }
  const event: UsageEvent = { type: "usage", model: step.model ?? cfg.model };
  if (totals.prompt !== undefined) event.promptTokens = totals.prompt;
  if (totals.total > 0) {
    event.completionTokens = totals.completion;
    event.totalTokens = totals.total;
  }
  if (cfg.contextWindow !== undefined) event.contextWindow = cfg.contextWindow;
  if (totals.costKnown) event.cost = totals.cost;
  return event;
}

async function buildMessages(cfg: Config, input: TurnInput): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  if (cfg.systemPrompt) messages.push({ role: "system", content: cfg.systemPrompt });
  for (const item of input.history) {
    const text = withAttachmentNotes(item.text, item.media);
    if (text === "") continue;
    messages.push({ role: item.role, content: text });
  }
  const { text, media } = input.message;
  const images = cfg.vision ? media.filter((m) => m.kind === "image") : [];
  const described = media.filter((m) => !images.includes(m));
  const userText = withAttachmentNotes(text, described);
  if (images.length === 0) {
    messages.push({ role: "user", content: userText });
  } else {
    const parts: Array<Record<string, unknown>> = [];
    if (userText !== "") parts.push({ type: "text", text: userText });
    for (const image of images) {
      const bytes = await input.readMedia(image.media_id);
      parts.push({ type: "image_url", image_url: { url: `data:${image.mime};base64,${Buffer.from(bytes).toString("base64")}` } });
    }
    messages.push({ role: "user", content: parts });
  }
  return messages;
}

function withAttachmentNotes(text: string, media: TurnInput["message"]["media"]): string {
  // The model cannot open the files; telling it they exist keeps its answer sensible.
  const notes = media.map((m) => `[Attached ${m.kind}: ${m.filename} (${m.mime}, ${m.size} bytes)]`);
  return [text, ...notes].filter((s) => s !== "").join("\n");
}

/**
 * A `fetch` bounded by `timeoutMs` of silence and by the caller's signal. `touch()` restarts the
 * silence clock and `pause()` stops it; `timedOut` tells a timeout from a caller's abort.
 */
function guardedRequest(cfg: Config, signal: AbortSignal) {
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

async function* streamStep(cfg: Config, body: Record<string, unknown>, signal: AbortSignal, separator: string): AsyncGenerator<RuntimeEvent, StepResult> {
  const result: StepResult = { separator, text: "", toolCalls: [], aborted: false };
  const calls: Array<{ id?: string; name: string; arguments: string }> = [];
  const guard = guardedRequest(cfg, signal);
  let phase: "connect" | "stream" = "connect";
  let sawDone = false;
  let sawFinish = false;

  const failure = (error: unknown): GatewayError | undefined => {
    if (signal.aborted) return undefined;
    if (guard.state.timedOut) {
      const seconds = Math.round(cfg.timeoutMs / 100) / 10;
      return new GatewayError(
        "internal",
        phase === "connect" ? `The model server did not answer within ${seconds} s` : `The model server stopped sending for ${seconds} s; the answer is incomplete`,
        { cause: error },
      );
    }
    if (phase === "connect") {
      const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
      const why = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
      return new GatewayError("internal", `Could not reach the model server at ${cfg.baseUrl} (${why})`, { cause: error });
    }
    return new GatewayError("internal", "The connection to the model server dropped mid-answer; the answer is incomplete", { cause: error });
  };

  try {
    guard.touch();
    let response: Response;
    try {
      response = await cfg.fetch(cfg.url, { method: "POST", headers: cfg.headers, body: JSON.stringify(body), signal: guard.signal });
      guard.pause();
    } catch (error) {
      const e = failure(error);
      if (e) throw e;
      result.aborted = true;
      return result;
    }
    if (!response.ok) {
      let text = "";
      try {
        guard.touch();
        text = (await readBoundedText(response, ERROR_BODY_BYTES)).text;
      } catch {
        // The status alone is enough to report.
      }
      if (signal.aborted) {
        result.aborted = true;
        return result;
      }
      throw httpError(response, text);
    }
    phase = "stream";
    if (!response.body) throw new GatewayError("internal", "The model server sent an empty response");

    const contentType = response.headers.get("content-type") ?? "";
    const pending: string[] = [];
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    if (contentType.includes("application/json")) {
      // Some servers ignore `stream: true` (or answer errors as JSON with status 200).
      guard.touch();
      let read: { text: string; complete: boolean };
      try {
        read = await readBoundedText(response, cfg.maxResponseBytes);
      } catch (error) {
        const e = failure(error);
        if (e) throw e;
        result.aborted = true;
        return result;
      }
      if (!read.complete) throw responseTooLarge(cfg.maxResponseBytes);
      const json = parseChunk(read.text);
      const choice = (json.choices as Array<Record<string, unknown>> | undefined)?.[0];
      pending.push(JSON.stringify({ ...json, choices: choice ? [{ ...choice, delta: choice.message ?? choice.delta }] : [] }));
      sawDone = true;
    } else {
      reader = response.body.getReader();
    }

    const parser = createParser({
      onEvent(event) {
        if (event.data.trim() === "[DONE]") sawDone = true;
        else if (!sawDone) pending.push(event.data);
      },
    });
    const decoder = new TextDecoder();
    const meter = new SseMeter(cfg.maxEventBytes, cfg.maxResponseBytes);
    // Parsed one at a time so that text before a malformed chunk is still yielded.
    const drain = function* (): Generator<RuntimeEvent> {
      for (const data of pending.splice(0)) {
        const chunk = parseChunk(data);
        yield* applyChunk(chunk, result, calls);
        if ((chunk.choices as Array<{ finish_reason?: unknown }> | undefined)?.some((c) => c?.finish_reason)) sawFinish = true;
      }
    };
    try {
      while (true) {
        yield* drain();
        if (sawDone || !reader) break;
        guard.touch();
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
          guard.pause();
        } catch (error) {
          const e = failure(error);
          if (e) throw e;
          result.aborted = true;
          return result;
        }
        if (read.done) {
          parser.feed(decoder.decode() + "\n\n");
          yield* drain();
          // A clean end without `[DONE]` is fine once the model said why it stopped.
          if (!sawDone && !sawFinish) {
            const e = failure(new Error("stream ended before [DONE]"));
            if (e) throw e;
            result.aborted = true;
            return result;
          }
          break;
        }
        // Counted before the parser sees them: it would buffer a line that never ends, whole.
        meter.add(read.value);
        parser.feed(decoder.decode(read.value, { stream: true }));
      }
    } finally {
      // Release the connection when we stop early (an error, an abort, or `[DONE]` before the end).
      reader?.cancel().catch(() => {});
    }
  } finally {
    guard.dispose();
  }

  result.toolCalls = calls
    .filter((c) => c.name !== "")
    // Ids pair each result with its call across the whole turn, so a missing one must stay unique.
    .map((c) => ({ id: c.id ?? `call_${randomUUID().slice(0, 8)}`, type: "function" as const, function: { name: c.name, arguments: c.arguments } }));
  return result;
}

function parseChunk(data: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (error) {
    throw new GatewayError("internal", `The model server sent a malformed stream chunk: ${abridge(data, 120)}`, { cause: error });
  }
  if (json === null || typeof json !== "object") {
    throw new GatewayError("internal", `The model server sent a malformed stream chunk: ${abridge(data, 120)}`);
  }
  const error = (json as { error?: unknown }).error;
  if (error) {
    // vLLM and OpenRouter report failures mid-stream as a chunk with an `error` object.
    const message = typeof error === "string" ? error : String((error as { message?: unknown }).message ?? JSON.stringify(error));
    throw new GatewayError("internal", `The model server reported an error: ${abridge(message, 300)}`);
  }
  return json as Record<string, unknown>;
}

function* applyChunk(chunk: Record<string, unknown>, result: StepResult, calls: Array<{ id?: string; name: string; arguments: string }>): Generator<RuntimeEvent> {
  if (typeof chunk.model === "string" && chunk.model !== "") result.model = chunk.model;
  const usage = chunk.usage as Record<string, unknown> | null | undefined;
  if (usage && typeof usage === "object") {
    result.usage = {
      prompt: num(usage.prompt_tokens),
      completion: num(usage.completion_tokens),
      total: num(usage.total_tokens),
      cost: num(usage.cost),
    };
  }
  const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<Record<string, unknown>>) : [];
  const choice = choices.find((c) => (c.index ?? 0) === 0) ?? choices[0];
  if (!choice) return;
  if (typeof choice.finish_reason === "string") result.finishReason = choice.finish_reason;
  const delta = (choice.delta ?? {}) as Record<string, unknown>;
  // vLLM sends the same reasoning under both names; take one so it is not doubled.
  const reasoning = [delta.reasoning_content, delta.reasoning].find((r) => typeof r === "string" && r !== "") as string | undefined;
  if (reasoning) yield { type: "reasoning", delta: reasoning };
  if (typeof delta.content === "string" && delta.content !== "") {
    const first = result.text === "";
    result.text += delta.content;
    yield { type: "text", delta: first ? result.separator + delta.content : delta.content };
  }
  if (Array.isArray(delta.tool_calls)) {
    for (const [position, fragment] of (delta.tool_calls as Array<Record<string, unknown>>).entries()) {
      const fn = (fragment.function ?? {}) as { name?: unknown; arguments?: unknown };
      const id = typeof fragment.id === "string" && fragment.id !== "" ? fragment.id : undefined;
      // Most servers number the calls; a few omit `index`, sending each call whole or by id.
      let slot: number;
      if (typeof fragment.index === "number") slot = fragment.index;
      else if (id !== undefined) slot = calls.findIndex((c) => c.id === id) === -1 ? calls.length : calls.findIndex((c) => c.id === id);
      else slot = calls.length === 0 ? position : calls.length - 1;
      const call = (calls[slot] ??= { name: "", arguments: "" });
      if (id !== undefined && call.id === undefined) call.id = id;
      if (typeof fn.name === "string" && fn.name !== "" && call.name === "") call.name = fn.name;
      if (typeof fn.arguments === "string") call.arguments += fn.arguments;
      else if (fn.arguments && typeof fn.arguments === "object") call.arguments += JSON.stringify(fn.arguments);
    }
  }
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function abridge(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function httpError(response: Response, body: string): GatewayError {
  const status = response.status;
  let detail = body;
  try {
    const json = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof json.error === "string" ? json.error : json.error?.message ?? json.message;
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
      seconds === undefined ? `Rate limited by the model server (HTTP 429); try again later${suffix}` : `Rate limited by the model server; retry after ${seconds} s${suffix}`,
    );
  }
  if (status === 404) return new GatewayError("internal", `The model server has no such model or endpoint (HTTP 404)${suffix}`);
  if (status >= 500) return new GatewayError("internal", `The model server failed (HTTP ${status})${suffix}`);
  return new GatewayError("internal", `The model server rejected the request (HTTP ${status})${suffix}`);
}

function retryAfterSeconds(header: string | null): number | undefined {
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Math.ceil(Number(header));
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** Resolves with the promise's value, or with undefined as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then((value) => {
      signal.removeEventListener("abort", onAbort);
      resolve(value);
    });
  });
}

const TITLE_PROMPT =
  "Write a title of at most 6 words for a conversation that starts with the user's message below. " +
  "Answer with the title only: no quotes, no trailing punctuation.";

async function generateTitle(cfg: Config, text: string, signal: AbortSignal): Promise<string> {
  const guard = guardedRequest(cfg, signal);
  try {
    guard.touch();
    let response: Response;
    let raw: string;
    try {
      response = await cfg.fetch(cfg.url, {
        method: "POST",
        headers: cfg.headers,
        body: JSON.stringify({
          ...cfg.body,
          model: cfg.titleModel,
          stream: false,
          messages: [
            { role: "system", content: TITLE_PROMPT },
            { role: "user", content: abridge(text, 2000) },
          ],
        }),
        signal: guard.signal,
      });
      const read = await readBoundedText(response, response.ok ? cfg.maxResponseBytes : ERROR_BODY_BYTES);
      if (response.ok && !read.complete) throw responseTooLarge(cfg.maxResponseBytes);
      raw = read.text;
    } catch (error) {
      if (guard.state.timedOut) throw new GatewayError("internal", "The model server did not answer the title request in time", { cause: error });
      throw error;
    }
    if (!response.ok) throw httpError(response, raw);
    const json = parseChunk(raw) as { choices?: Array<{ message?: { content?: unknown } }> };
    const content = json.choices?.[0]?.message?.content;
    const title = cleanTitle(typeof content === "string" ? content : "");
    if (title === "") throw new GatewayError("internal", "The model returned an empty title");
    return title;
  } finally {
    guard.dispose();
  }
}

function cleanTitle(content: string): string {
  const withoutThinking = content.replace(/<think>[\s\S]*?<\/think>/g, "");
  const line = withoutThinking.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? "";
  const bare = line
    .replace(/^(title\s*:\s*)/i, "")
    .replace(/^["'“”‘’*#\s]+|["'“”‘’*\s]+$/g, "")
    .replace(/[.!?:;,]+$/, "");
  return bare.split(/\s+/).filter(Boolean).slice(0, 6).join(" ").slice(0, 80);
}
