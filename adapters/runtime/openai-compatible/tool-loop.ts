/**
 * A turn: model calls in a loop, each followed by the tool calls it asked for, until the model
 * answers without calling a tool, the step limit is reached, or the turn is stopped; a message
 * steered in meanwhile joins before the next call, and gets one of its own when none would follow.
 * @module
 */
import type { ModelPrice, RuntimeEvent, ToolApproval, TurnInput } from "chat-gateway";
import { askApproval, callNeedsApproval } from "../approval.js";
import { turnModel } from "../models.js";
import type { OfferedModel } from "../models.js";
import { abridge, argsPreview } from "../text.js";
import { addCallUsage, emptyTotals, usageEvent } from "../usage.js";
import { streamStep } from "./chat-completions.js";
import type { ClientConfig } from "./chat-completions.js";
import type { StepResult, ToolCallWire } from "./chunks.js";
import { buildMessages } from "./messages.js";
import type { SteerInboxes, TurnSteers } from "../steer.js";

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

/** What a turn needs, the options resolved. */
export interface TurnConfig extends ClientConfig {
  model: string;
  systemPrompt?: string;
  tools: Record<string, OpenAICompatibleTool>;
  maxSteps: number;
  body: Record<string, unknown>;
  contextWindow?: number;
  prices?: ModelPrice;
  vision: boolean;
  needsApproval?: ToolApproval;
  /** Models a lane may choose besides `model`. */
  models?: OfferedModel[];
}

/** Runs a turn; see the module comment. Messages steered into it join before its next model call. */
export async function* runTurn(cfg: TurnConfig, input: TurnInput, steers: SteerInboxes): AsyncGenerator<RuntimeEvent> {
  const inbox = steers.open(input);
  try {
    yield* loop(cfg, input, inbox);
  } finally {
    // Failed or stopped: the turn takes no more (a message it had taken ends with it, docs/PROTOCOL.md §14.4).
    inbox.drain();
    inbox.close();
  }
}

async function* loop(cfg: TurnConfig, input: TurnInput, inbox: TurnSteers): AsyncGenerator<RuntimeEvent> {
  const messages = await buildMessages(cfg, input);
  const toolSpecs = Object.entries(cfg.tools).map(([name, tool]) => ({
    type: "function",
    function: { name, description: tool.description ?? "", parameters: tool.parameters },
  }));
  const totals = emptyTotals();
  const model = turnModel(cfg.model, cfg.models, input.model);
  let answered = false;

  for (let step = 1; ; step++) {
    if (input.signal.aborted) return;
    for (const text of inbox.drain()) messages.push({ role: "user", content: text });
    const body: Record<string, unknown> = {
      model,
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
    if (result.usage) addCallUsage(totals, result.usage, cfg.prices);
    yield usageEvent(totals, result.model ?? model, cfg.contextWindow);
    if (result.finishReason === "length") {
      yield { type: "commentary", text: "The answer was cut off at the model's output limit." };
    }
    if (result.toolCalls.length === 0 || step >= cfg.maxSteps) {
      if (inbox.close()) {
        if (result.toolCalls.length === 0) return;
        yield {
          type: "commentary",
          text: `Stopped after ${cfg.maxSteps} model calls: the model still wanted to call ${result.toolCalls.map((c) => c.function.name).join(", ")}.`,
        };
        return;
      }
      // A message was steered in during this call: it gets one more, past the step limit too.
      if (result.text !== "") messages.push({ role: "assistant", content: result.text });
      continue;
    }
    messages.push({
      role: "assistant",
      content: result.text === "" ? null : result.text,
      tool_calls: result.toolCalls,
    });
    for (const call of result.toolCalls) {
      const outcome = yield* runTool(cfg, call, input);
      if (outcome === undefined) return;
      messages.push({ role: "tool", tool_call_id: call.id, content: outcome });
    }
  }
}

/**
 * Runs one call, after the person approved it when `needsApproval` says so; yields its start and
 * end; returns what the model gets, or undefined when aborted.
 */
async function* runTool(
  cfg: TurnConfig,
  call: ToolCallWire,
  input: TurnInput,
): AsyncGenerator<RuntimeEvent, string | undefined> {
  const { signal } = input;
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
  const preview = previewOf(tool, name, args);
  yield { type: "tool-start", id: call.id, name, args, preview };

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
  if (await callNeedsApproval(cfg.needsApproval, name, args)) {
    const denied = await askApproval(input, name, args, preview);
    if (signal.aborted) return undefined;
    if (denied !== undefined) {
      yield end(denied, false);
      return denied;
    }
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
  return argsPreview(name, args);
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
