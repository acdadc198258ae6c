/**
 * An {@link AgentRuntime} that talks to any server speaking the OpenAI Chat Completions API with
 * streaming: OpenAI, OpenRouter, llama.cpp's `llama-server`, vLLM, Ollama, LM Studio, DeepSeek…
 *
 * It streams text and reasoning (`reasoning_content` or `reasoning`), assembles streamed tool
 * calls, runs them through the tools you pass, and loops until the model answers without calling
 * a tool. No SDK: one `fetch` per model call and an SSE parser. A message sent with
 * `when_busy: "steer"` (docs/PROTOCOL.md §14.4) joins the running turn as a user message before its
 * next model call.
 *
 * How a turn fails: a refused key, a rate limit, a server error, an answer that is neither an event
 * stream nor JSON (a web page at a wrong base URL), a connection dropped mid-answer, a malformed
 * chunk, a timeout, or a response past `maxEventBytes` or `maxResponseBytes` ends the
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
import type { AgentRuntime, ModelPrice, ToolApproval } from "chat-gateway";
// biome-ignore lint/correctness/noUnusedImports: imported for the {@link} in the module comment above
import type { GatewayError } from "chat-gateway/protocol";
import { checkToolApproval } from "../approval.js";
import { bindingCommands, runBindingCommand } from "../commands.js";
import { checkModelChoices, modelList } from "../models.js";
import type { OfferedModel } from "../models.js";
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, byteLimit } from "./response-limits.js";
import { generateTitle } from "./title.js";
import { runTurn } from "./tool-loop.js";
import { SteerInboxes } from "../steer.js";
import type { OpenAICompatibleTool, TurnConfig } from "./tool-loop.js";

export type { OpenAICompatibleTool } from "./tool-loop.js";
export type { OfferedModel } from "../models.js";

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
  /**
   * Other models of the same server a lane may switch to (docs/PROTOCOL.md §11: `picker.model`,
   * `/model <id>`). A turn in a lane whose chosen model is one of them uses it; any other lane
   * uses `model`.
   */
  models?: OfferedModel[];
  /** System message put before the history. */
  systemPrompt?: string;
  /** Tools the model may call, by name. */
  tools?: Record<string, OpenAICompatibleTool>;
  /**
   * Tool calls that wait for the person's approval before they run (docs/PROTOCOL.md §11): a list
   * of tool names, or a function of the name and the arguments. The turn asks with
   * `picker.approval` showing the full arguments; approved, the tool runs; denied, expired or
   * cancelled, the tool does not run, the call is reported failed and the model gets a tool result
   * saying it was not approved.
   */
  needsApproval?: ToolApproval;
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
  prices?: ModelPrice;
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
  if (!Number.isInteger(maxSteps) || maxSteps < 1)
    throw new TypeError("openAICompatibleRuntime: maxSteps must be an integer >= 1");
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!(timeoutMs > 0)) throw new TypeError("openAICompatibleRuntime: timeoutMs must be > 0");
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== "function")
    throw new TypeError("openAICompatibleRuntime: no fetch available; pass options.fetch");
  for (const [name, tool] of Object.entries(options.tools ?? {})) {
    if (typeof tool?.execute !== "function")
      throw new TypeError(`openAICompatibleRuntime: tool "${name}" has no execute function`);
  }

  checkToolApproval("openAICompatibleRuntime", options.needsApproval);
  checkModelChoices("openAICompatibleRuntime", options.models);

  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const cfg: TurnConfig & { titleModel: string } = {
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
    needsApproval: options.needsApproval,
    models: options.models,
    titleModel: options.titleModel ?? options.model,
  };

  const steers = new SteerInboxes();
  const runtime: AgentRuntime = {
    model: options.model,
    turn: (input) => runTurn(cfg, input, steers),
    steer: (input) => steers.take(input),
    commands: bindingCommands,
    models: () => modelList(cfg.model, options.models),
    command: (input) =>
      runBindingCommand(input, {
        models: modelList(cfg.model, options.models),
        tools: Object.entries(cfg.tools).map(([name, tool]) => [name, tool.description]),
      }),
  };
  if (options.generateTitle !== false) runtime.generateTitle = (text, signal) => generateTitle(cfg, text, signal);
  return runtime;
}
