/**
 * An {@link AgentRuntime} around the AI SDK's `streamText` (the `ai` package, version 5 or 6, an
 * optional peer dependency). Any provider the AI SDK supports works, with its tools: the binding
 * only translates `fullStream` parts into runtime events.
 *
 * | `fullStream` part | runtime event |
 * |---|---|
 * | `text-delta` | `text` |
 * | `reasoning-delta` | `reasoning` |
 * | `tool-call` | `tool-start` (full `input` as `args`) |
 * | `tool-result` (final, not preliminary) | `tool-end`, `ok: true` |
 * | `tool-error`, `tool-output-denied` and `tool-approval-request` (these two ai 6 only) | `tool-end`, `ok: false` |
 * | `finish-step`, `finish` | `usage` (totals of the turn; prompt tokens of the last call) |
 * | `error` | the turn throws a {@link GatewayError} with a message a user can act on |
 * | `abort` | the turn ends quietly |
 *
 * @example
 * ```ts
 * import { openai } from "@ai-sdk/openai";
 * import { tool } from "ai";
 * import { z } from "zod";
 * import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
 *
 * const runtime = aiSdkRuntime({
 *   model: openai("gpt-4o-mini"),
 *   system: "You are terse.",
 *   tools: {
 *     clock: tool({ description: "Current time", inputSchema: z.object({}), execute: async () => new Date().toISOString() }),
 *   },
 * });
 * ```
 * @module
 */
import { generateText, stepCountIs, streamText } from "ai";
import type { LanguageModel, ModelMessage, ToolSet } from "ai";
import { GatewayError } from "chat-gateway";
import type { AgentRuntime, CommandEntry, CommandInput, RuntimeEvent, TurnInput, UsageEvent } from "chat-gateway";

type StreamTextParams = Parameters<typeof streamText>[0];

/**
 * Prices of a model, USD per million tokens, used to report a turn's cost when the provider does not.
 *
 * @example
 * ```ts
 * const prices: ModelPrices = { input: 3, output: 15 }; // claude-sonnet-4-5
 * ```
 */
export interface ModelPrices {
  input: number;
  output: number;
}

/**
 * Options of {@link aiSdkRuntime}.
 *
 * @example
 * ```ts
 * const options: AiSdkRuntimeOptions = {
 *   model: anthropic("claude-sonnet-4-5"),
 *   maxSteps: 20,
 *   contextWindow: 200_000,
 *   prices: { input: 3, output: 15 },
 *   streamTextOptions: { temperature: 0.3, maxRetries: 1 },
 * };
 * ```
 */
export interface AiSdkRuntimeOptions {
  /** The language model: a provider's model object, or a model id string for the AI Gateway. */
  model: LanguageModel;
  /** Tools made with the AI SDK's `tool()`; the AI SDK runs them. */
  tools?: ToolSet;
  /** System prompt. */
  system?: string;
  /** Model calls per turn when `stopWhen` is not given. Default 10. */
  maxSteps?: number;
  /** When to stop the tool loop, as `streamText` takes it; overrides `maxSteps`. */
  stopWhen?: StreamTextParams["stopWhen"];
  /** Passed to `streamText` as is. */
  providerOptions?: StreamTextParams["providerOptions"];
  /** Any other `streamText` option (`temperature`, `maxOutputTokens`, `maxRetries`, `headers`…). The binding's own options win. */
  streamTextOptions?: Partial<StreamTextParams>;
  /** Context window of the model, tokens; reported with the usage so the footer shows `context_pct`. */
  contextWindow?: number;
  /** Prices for the cost in the footer. Ignored when the provider reports a cost (OpenRouter). */
  prices?: ModelPrices;
  /** One-line summary of a tool call for the progress line. Default: the arguments, abridged. */
  preview?: (toolName: string, args: Record<string, unknown>) => string | undefined;
  /**
   * Send image attachments to the model as image parts (the model must accept images). Default
   * false: attachments are described to the model by a line of text.
   */
  vision?: boolean;
  /** Offer `generateTitle` for auto-threads. Default true. */
  generateTitle?: boolean;
  /** Model for titles, for example a cheaper one. Default: `model`. */
  titleModel?: LanguageModel;
}

const COMMANDS: CommandEntry[] = [
  { name: "/model", description: "Show the model answering in this chat", args_hint: "", category: "Info", aliases: [] },
  { name: "/tools", description: "List the tools the model can call", args_hint: "", category: "Tools & Skills", aliases: [] },
];

/**
 * Creates a runtime that runs each turn through the AI SDK's `streamText`, with
 * `abortSignal: input.signal`. Misconfiguration throws a `TypeError` here.
 *
 * @example
 * ```ts
 * const runtime = aiSdkRuntime({ model: openai("gpt-4o-mini"), tools: { weather }, contextWindow: 128_000 });
 * const gateway = createGateway({ storage: memoryStorage(), runtime });
 * ```
 */
export function aiSdkRuntime(options: AiSdkRuntimeOptions): AgentRuntime {
  if (!options || options.model === undefined || options.model === null || options.model === "") {
    throw new TypeError("aiSdkRuntime: model is required");
  }
  const maxSteps = options.maxSteps ?? 10;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new TypeError("aiSdkRuntime: maxSteps must be an integer >= 1");

  const declared = modelName(options.model);
  const runtime: AgentRuntime = {
    ...(declared === "unknown" ? {} : { model: declared }),
    turn: (input) => runTurn(options, maxSteps, input),
    commands: () => COMMANDS.map((c) => ({ ...c, aliases: [...c.aliases] })),
    command: (input) => runCommand(options, input),
  };
  if (options.generateTitle !== false) runtime.generateTitle = (text, signal) => generateTitle(options, text, signal);
  return runtime;
}

function modelName(model: LanguageModel): string {
  return typeof model === "string" ? model : (model as { modelId?: string }).modelId ?? "unknown";
}

async function* runCommand(options: AiSdkRuntimeOptions, input: CommandInput): AsyncGenerator<RuntimeEvent> {
  if (input.command === "/model") {
    yield { type: "text", delta: `Model: ${modelName(options.model)}` };
  } else if (input.command === "/tools") {
    const tools = Object.entries(options.tools ?? {});
    yield {
      type: "text",
      delta: tools.length === 0 ? "No tools." : tools.map(([n, t]) => `- ${n}${t.description ? `: ${t.description}` : ""}`).join("\n"),
    };
  } else {
    yield { type: "text", delta: `Unknown command ${input.command}` };
  }
}

// The parts read below exist with these fields in both ai 5 and ai 6; typed loosely so one
// binding compiles against either.
interface Part {
  type: string;
  [key: string]: unknown;
}

interface StepUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

async function* runTurn(options: AiSdkRuntimeOptions, maxSteps: number, input: TurnInput): AsyncGenerator<RuntimeEvent> {
  if (input.signal.aborted) return;
  const messages = await buildMessages(options, input);
  const result = streamText({
    ...options.streamTextOptions,
    model: options.model,
    system: options.system,
    messages,
    tools: options.tools,
    stopWhen: options.stopWhen ?? stepCountIs(maxSteps),
    providerOptions: options.providerOptions,
    abortSignal: input.signal,
    // Errors reach the caller through the `error` part; the default handler would also log them.
    onError: () => {},
  } as StreamTextParams);

  const started = new Map<string, number>();
  // The gateway joins all text into one answer; text before and after a tool call would run together.
  let answered = false;
  let stepText = false;
  const totals = { prompt: undefined as number | undefined, completion: 0, total: 0, cost: 0, costKnown: false, model: modelName(options.model) };
  const toolEnd = (part: Part, output: unknown, ok: boolean): RuntimeEvent => {
    const id = String(part.toolCallId);
    const start = started.get(id);
    started.delete(id);
    return {
      type: "tool-end",
      id,
      name: String(part.toolName),
      output,
      ok,
      ...(start !== undefined ? { duration: (performance.now() - start) / 1000 } : {}),
    };
  };

  try {
    for await (const raw of untilAborted(result.fullStream as AsyncIterable<unknown>, input.signal)) {
      const part = raw as Part;
      switch (part.type) {
        case "text-delta": {
          const delta = (part.text ?? part.delta ?? part.textDelta) as string | undefined;
          if (!delta) break;
          yield { type: "text", delta: answered && !stepText ? `\n\n${delta}` : delta };
          stepText = true;
          break;
        }
        case "reasoning-delta":
        case "reasoning": {
          const delta = (part.text ?? part.delta ?? part.textDelta) as string | undefined;
          if (typeof delta === "string" && delta !== "") yield { type: "reasoning", delta };
          break;
        }
        case "tool-call": {
          const id = String(part.toolCallId);
          const name = String(part.toolName);
          const value = part.input ?? part.args;
          const args = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : { input: value };
          started.set(id, performance.now());
          yield { type: "tool-start", id, name, args, preview: previewOf(options, name, args) };
          break;
        }
        case "tool-result":
          // Preliminary results are progress of a streaming tool; the final one ends the call.
          if (part.preliminary === true) break;
          yield toolEnd(part, part.output ?? part.result, true);
          break;
        case "tool-error":
          yield toolEnd(part, messageOf(part.error), false);
          break;
        case "tool-output-denied":
          yield toolEnd(part, "The tool call was denied.", false);
          break;
        case "tool-approval-request": {
          const call = (part.toolCall ?? {}) as Part;
          yield toolEnd(call, "This tool needs an approval, which this runtime cannot ask for.", false);
          break;
        }
        case "finish-step": {
          answered ||= stepText;
          stepText = false;
          const usage = part.usage as StepUsage | undefined;
          const response = part.response as { modelId?: string } | undefined;
          if (response?.modelId) totals.model = response.modelId;
          if (usage) {
            if (usage.inputTokens !== undefined) totals.prompt = usage.inputTokens;
            totals.completion += usage.outputTokens ?? 0;
            totals.total += usage.totalTokens ?? (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
            const reported = providerCost(part.providerMetadata);
            if (reported !== undefined) {
              totals.cost += reported;
              totals.costKnown = true;
            } else if (options.prices) {
              totals.cost += ((usage.inputTokens ?? 0) * options.prices.input + (usage.outputTokens ?? 0) * options.prices.output) / 1e6;
              totals.costKnown = true;
            }
          }
          yield usageEvent(options, totals);
          break;
        }
        case "finish": {
          const usage = (part.totalUsage ?? part.usage) as StepUsage | undefined;
          // The SDK's own totals are authoritative over the sum of the steps.
          if (usage?.outputTokens !== undefined) totals.completion = usage.outputTokens;
          if (usage?.totalTokens !== undefined) totals.total = usage.totalTokens;
          yield usageEvent(options, totals);
          if (part.finishReason === "tool-calls") {
            // The stop condition ended the loop while the model still wanted tools: say so, or the turn just ends.
            yield { type: "commentary", text: "Stopped at the step limit: the model still wanted to call tools." };
          }
          break;
        }
        case "error":
          if (input.signal.aborted) return;
          throw toGatewayError(part.error);
        case "abort":
          return;
      }
    }
  } catch (error) {
    if (input.signal.aborted) return;
    throw toGatewayError(error);
  }
}

/**
 * Iterates until the stream ends or `signal` aborts. A provider whose stream ignores the signal
 * would otherwise keep the turn open after `/stop`.
 */
async function* untilAborted<T>(iterable: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const iterator = iterable[Symbol.asyncIterator]();
  let onAbort!: () => void;
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    while (!signal.aborted) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next === "aborted" || next.done) return;
      yield next.value;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Not awaited: a stream that ignores the abort may never settle its pending read.
    iterator.return?.()?.catch(() => {});
  }
}

function usageEvent(options: AiSdkRuntimeOptions, totals: { prompt?: number; completion: number; total: number; cost: number; costKnown: boolean; model: string }): UsageEvent {
  const event: UsageEvent = { type: "usage", model: totals.model };
  if (totals.prompt !== undefined) event.promptTokens = totals.prompt;
  if (totals.total > 0) {
    event.completionTokens = totals.completion;
    event.totalTokens = totals.total;
  }
  if (options.contextWindow !== undefined) event.contextWindow = options.contextWindow;
  if (totals.costKnown) event.cost = totals.cost;
  return event;
}

function providerCost(metadata: unknown): number | undefined {
  // OpenRouter's provider reports the billed cost of each call.
  const cost = (metadata as { openrouter?: { usage?: { cost?: unknown } } } | undefined)?.openrouter?.usage?.cost;
  return typeof cost === "number" && Number.isFinite(cost) ? cost : undefined;
}

function previewOf(options: AiSdkRuntimeOptions, name: string, args: Record<string, unknown>): string {
  try {
    const custom = options.preview?.(name, args);
    if (custom !== undefined) return custom;
  } catch {
    // A broken preview must not fail the turn; fall back to the generic one.
  }
  const parts = Object.entries(args).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return abridge(`${name}(${parts.join(", ")})`, 120);
}

function abridge(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

/** Turns whatever the AI SDK reports into an error whose message a user can act on. */
function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  // A RetryError wraps the attempts; the last one says what went wrong.
  const last = (error as { lastError?: unknown })?.lastError ?? error;
  const status = (last as { statusCode?: unknown })?.statusCode;
  const detail = abridge(messageOf(last), 300);
  if (typeof status === "number") {
    if (status === 401 || status === 403) return new GatewayError("internal", `The model provider refused the API key (HTTP ${status}): ${detail}`, { cause: error });
    if (status === 429) {
      const headers = (last as { responseHeaders?: Record<string, string> }).responseHeaders ?? {};
      const retry = headers["retry-after"] ?? headers["Retry-After"];
      const seconds = retry !== undefined && /^\d+(\.\d+)?$/.test(retry.trim()) ? Math.ceil(Number(retry)) : undefined;
      return new GatewayError(
        "rate_limited",
        seconds === undefined ? `Rate limited by the model provider (HTTP 429); try again later: ${detail}` : `Rate limited by the model provider; retry after ${seconds} s: ${detail}`,
        { cause: error },
      );
    }
    if (status >= 500) return new GatewayError("internal", `The model provider failed (HTTP ${status}): ${detail}`, { cause: error });
    return new GatewayError("internal", `The model provider rejected the request (HTTP ${status}): ${detail}`, { cause: error });
  }
  return new GatewayError("internal", `The model failed: ${detail}`, { cause: error });
}

async function buildMessages(options: AiSdkRuntimeOptions, input: TurnInput): Promise<ModelMessage[]> {
  const messages: ModelMessage[] = [];
  for (const item of input.history) {
    const text = withAttachmentNotes(item.text, item.media);
    if (text !== "") messages.push({ role: item.role, content: text });
  }
  const { text, media } = input.message;
  const images = options.vision ? media.filter((m) => m.kind === "image") : [];
  const userText = withAttachmentNotes(text, media.filter((m) => !images.includes(m)));
  if (images.length === 0) {
    messages.push({ role: "user", content: userText });
  } else {
    const content: Array<{ type: "text"; text: string } | { type: "image"; image: Uint8Array; mediaType: string }> = [];
    if (userText !== "") content.push({ type: "text", text: userText });
    for (const image of images) content.push({ type: "image", image: await input.readMedia(image.media_id), mediaType: image.mime });
    messages.push({ role: "user", content });
  }
  return messages;
}

function withAttachmentNotes(text: string, media: TurnInput["message"]["media"]): string {
  // The model cannot open the files; telling it they exist keeps its answer sensible.
  const notes = media.map((m) => `[Attached ${m.kind}: ${m.filename} (${m.mime}, ${m.size} bytes)]`);
  return [text, ...notes].filter((s) => s !== "").join("\n");
}

const TITLE_PROMPT =
  "Write a title of at most 6 words for a conversation that starts with the user's message. " +
  "Answer with the title only: no quotes, no trailing punctuation.";

async function generateTitle(options: AiSdkRuntimeOptions, text: string, signal: AbortSignal): Promise<string> {
  let content: string;
  try {
    const result = await generateText({
      model: options.titleModel ?? options.model,
      system: TITLE_PROMPT,
      prompt: abridge(text, 2000),
      providerOptions: options.providerOptions,
      abortSignal: signal,
    });
    content = result.text;
  } catch (error) {
    throw toGatewayError(error);
  }
  const title = cleanTitle(content);
  if (title === "") throw new GatewayError("internal", "The model returned an empty title");
  return title;
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
