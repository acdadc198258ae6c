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
 *
 * A tool call that needs approval (ai 6's `needsApproval` on the tool, or the `needsApproval`
 * option, for ai 5 too) asks the person with `picker.approval` (docs/PROTOCOL.md §11) before it
 * runs; not approved, it ends `ok: false` and the model is told it was not run. The SDK's own
 * approval request then only remains for a tool the provider runs, which the binding cannot gate.
 * | `finish-step`, `finish` | `usage` (totals of the turn; prompt tokens of the last call) |
 * | `error` | the turn throws a {@link GatewayError} with a message a user can act on |
 * | `abort` | the turn ends quietly |
 *
 * A message sent with `when_busy: "steer"` (docs/PROTOCOL.md §14.4) joins the running turn as a
 * user message before its next step (through `prepareStep`, after yours when you pass one in
 * `streamTextOptions`); when the turn would end without another step, one more `streamText` call
 * answers it.
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
import type { LanguageModel, ModelMessage } from "ai";
import { GatewayError } from "chat-gateway/protocol";
import type { AgentRuntime, RuntimeEvent, TurnInput } from "chat-gateway";
import { checkToolApproval } from "../approval.js";
import { bindingCommands, runBindingCommand } from "../commands.js";
import { checkModelChoices, modelList } from "../models.js";
import { abridge, argsPreview, cleanTitle } from "../text.js";
import { addCallUsage, emptyTotals, reportedUsage, usageEvent } from "../usage.js";
import type { UsageTotals } from "../usage.js";
import { gateTools } from "./approvals.js";
import { steeredRound } from "./steering.js";
import { SteerInboxes } from "../steer.js";
import { messageOf, toGatewayError } from "./errors.js";
import { buildMessages } from "./messages.js";
import type { AiSdkRuntimeOptions, StreamTextParams } from "./options.js";

export type { AiSdkRuntimeOptions } from "./options.js";

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
  if (!Number.isInteger(maxSteps) || maxSteps < 1)
    throw new TypeError("aiSdkRuntime: maxSteps must be an integer >= 1");
  checkToolApproval("aiSdkRuntime", options.needsApproval);
  checkModelChoices("aiSdkRuntime", options.models);

  const declared = modelName(options.model);
  const steers = new SteerInboxes();
  const runtime: AgentRuntime = {
    ...(declared === "unknown" ? {} : { model: declared }),
    turn: (input) => runTurn(options, maxSteps, input, steers),
    steer: (input) => steers.take(input),
    commands: bindingCommands,
    models: () => modelList(modelName(options.model), options.models),
    command: (input) =>
      runBindingCommand(input, {
        models: modelList(modelName(options.model), options.models),
        tools: Object.entries(options.tools ?? {}).map(([name, tool]) => [name, tool.description]),
      }),
  };
  if (options.generateTitle !== false) runtime.generateTitle = (text, signal) => generateTitle(options, text, signal);
  return runtime;
}

function modelName(model: LanguageModel): string {
  return typeof model === "string" ? model : ((model as { modelId?: string }).modelId ?? "unknown");
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

/** What a turn's stream carries from one part to the next. */
interface TurnState {
  options: AiSdkRuntimeOptions;
  /** Start times of the tool calls still running, by call id. */
  started: Map<string, number>;
  /** Text came in an earlier step: the next step's text starts on a new paragraph. */
  answered: boolean;
  /** Text came in this step. */
  stepText: boolean;
  totals: UsageTotals;
  model: string;
  /** The totals of the earlier `streamText` rounds of the turn (a steered message makes another). */
  base: { completion: number; total: number };
}

async function* runTurn(
  options: AiSdkRuntimeOptions,
  maxSteps: number,
  input: TurnInput,
  steers: SteerInboxes,
): AsyncGenerator<RuntimeEvent> {
  if (input.signal.aborted) return;
  const inbox = steers.open(input);
  try {
    let messages = await buildMessages(options, input);
    const model = options.models?.find((m) => m.id === input.model)?.model ?? options.model;
    // The gateway joins all text into one answer; text before and after a tool call would run together.
    const state: TurnState = {
      options,
      started: new Map(),
      answered: false,
      stepText: false,
      totals: emptyTotals(),
      model: modelName(model),
      base: { completion: 0, total: 0 },
    };
    for (;;) {
      const round = steeredRound(inbox);
      const result = streamText({
        ...options.streamTextOptions,
        model,
        system: options.system,
        messages,
        tools: gateTools(options.tools, options.needsApproval, input, (name, args) => previewOf(options, name, args)),
        stopWhen: options.stopWhen ?? stepCountIs(maxSteps),
        providerOptions: options.providerOptions,
        abortSignal: input.signal,
        prepareStep: round.prepareStep(options.streamTextOptions?.prepareStep),
        // Errors reach the caller through the `error` part; the default handler would also log them.
        onError: () => {},
      } as StreamTextParams);
      if (!(yield* streamRound(state, result.fullStream as AsyncIterable<unknown>, input.signal))) return;
      if (inbox.close()) return;
      // A message was steered in during the last call: one more round answers it.
      messages = round.merged([...messages, ...((await result.response).messages as ModelMessage[])]);
      state.base = { completion: state.totals.completion, total: state.totals.total };
    }
  } finally {
    // Failed or stopped: the turn takes no more (a message it had taken ends with it, docs/PROTOCOL.md §14.4).
    inbox.drain();
    inbox.close();
  }
}

/** One `streamText` call's parts as runtime events; false when the turn was stopped. */
async function* streamRound(
  state: TurnState,
  stream: AsyncIterable<unknown>,
  signal: AbortSignal,
): AsyncGenerator<RuntimeEvent, boolean> {
  try {
    for await (const raw of untilAborted(stream, signal)) {
      const part = raw as Part;
      if (part.type === "error") {
        if (signal.aborted) return false;
        throw toGatewayError(part.error);
      }
      if (part.type === "abort") return false;
      yield* translatePart(state, part);
    }
  } catch (error) {
    if (signal.aborted) return false;
    throw toGatewayError(error);
  }
  return !signal.aborted;
}

/** The runtime events of one `fullStream` part (see the table in the module comment). */
function* translatePart(state: TurnState, part: Part): Generator<RuntimeEvent> {
  switch (part.type) {
    case "text-delta": {
      const delta = (part.text ?? part.delta ?? part.textDelta) as string | undefined;
      if (!delta) break;
      yield { type: "text", delta: state.answered && !state.stepText ? `\n\n${delta}` : delta };
      state.stepText = true;
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
      const args =
        value !== null && typeof value === "object" && !Array.isArray(value)
          ? (value as Record<string, unknown>)
          : { input: value };
      state.started.set(id, performance.now());
      yield { type: "tool-start", id, name, args, preview: previewOf(state.options, name, args) };
      break;
    }
    case "tool-result":
      // Preliminary results are progress of a streaming tool; the final one ends the call.
      if (part.preliminary === true) break;
      yield toolEnd(state, part, part.output ?? part.result, true);
      break;
    case "tool-error":
      yield toolEnd(state, part, messageOf(part.error), false);
      break;
    case "tool-output-denied":
      yield toolEnd(state, part, "The tool call was denied.", false);
      break;
    case "tool-approval-request":
      yield toolEnd(
        state,
        (part.toolCall ?? {}) as Part,
        "This tool needs an approval, which this runtime cannot ask for.",
        false,
      );
      break;
    case "finish-step":
      yield stepFinished(state, part);
      break;
    case "finish":
      yield* turnFinished(state, part);
      break;
  }
}

function toolEnd(state: TurnState, part: Part, output: unknown, ok: boolean): RuntimeEvent {
  const id = String(part.toolCallId);
  const start = state.started.get(id);
  state.started.delete(id);
  return {
    type: "tool-end",
    id,
    name: String(part.toolName),
    output,
    ok,
    ...(start !== undefined ? { duration: (performance.now() - start) / 1000 } : {}),
  };
}

/** Adds a model call's usage to the turn's and reports the totals so far. */
function stepFinished(state: TurnState, part: Part): RuntimeEvent {
  state.answered ||= state.stepText;
  state.stepText = false;
  const usage = part.usage as StepUsage | undefined;
  const response = part.response as { modelId?: string } | undefined;
  if (response?.modelId) state.model = response.modelId;
  if (usage) {
    addCallUsage(
      state.totals,
      reportedUsage({
        prompt: usage.inputTokens,
        completion: usage.outputTokens,
        total: usage.totalTokens,
        cost: providerCost(part.providerMetadata),
      }),
      state.options.prices,
    );
  }
  return usageEvent(state.totals, state.model, state.options.contextWindow);
}

function* turnFinished(state: TurnState, part: Part): Generator<RuntimeEvent> {
  const usage = (part.totalUsage ?? part.usage) as StepUsage | undefined;
  // The SDK's own totals are authoritative over the sum of the steps.
  const totals = usage
    ? reportedUsage({ prompt: undefined, completion: usage.outputTokens, total: usage.totalTokens, cost: undefined })
    : {};
  if (totals.completion !== undefined) state.totals.completion = state.base.completion + totals.completion;
  if (totals.total !== undefined) state.totals.total = state.base.total + totals.total;
  yield usageEvent(state.totals, state.model, state.options.contextWindow);
  if (part.finishReason === "tool-calls") {
    // The stop condition ended the loop while the model still wanted tools: say so, or the turn just ends.
    yield { type: "commentary", text: "Stopped at the step limit: the model still wanted to call tools." };
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
  return argsPreview(name, args);
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
