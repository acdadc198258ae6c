/**
 * The chunks of a Chat Completions stream: parsed one at a time, their text and reasoning turned
 * into runtime events, their tool-call fragments assembled into whole calls.
 * @module
 */
import { randomUUID } from "node:crypto";
import { GatewayError } from "chat-gateway/protocol";
import type { RuntimeEvent } from "chat-gateway";
import { abridge } from "../text.js";
import { reportedUsage } from "../usage.js";
import type { CallUsage } from "../usage.js";

/** A tool call as the Chat Completions API sends and takes it back. */
export interface ToolCallWire {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** What one model call produced. */
export interface StepResult {
  /** Put before this step's first text: the answer so far already has text from an earlier step. */
  separator: string;
  text: string;
  toolCalls: ToolCallWire[];
  usage?: CallUsage;
  model?: string;
  finishReason?: string;
  aborted: boolean;
}

/** A tool call whose fragments are still arriving. */
export interface PartialCall {
  id?: string;
  name: string;
  arguments: string;
}

/** The calls of one step being assembled, by their index. */
export type PartialCalls = Map<number, PartialCall>;

/**
 * Most tool calls one model call may ask for. A server numbers the calls it sends; a number past
 * this is not a call a model means but a server gone wrong, and it ends the turn with an error.
 */
export const MAX_TOOL_CALLS_PER_STEP = 128;

/** Parses one chunk; a malformed one, or one carrying an `error`, throws a {@link GatewayError}. */
export function parseChunk(data: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (error) {
    throw new GatewayError("internal", `The model server sent a malformed stream chunk: ${abridge(data, 120)}`, {
      cause: error,
    });
  }
  if (json === null || typeof json !== "object") {
    throw new GatewayError("internal", `The model server sent a malformed stream chunk: ${abridge(data, 120)}`);
  }
  const error = (json as { error?: unknown }).error;
  if (error) {
    // vLLM and OpenRouter report failures mid-stream as a chunk with an `error` object.
    const message =
      typeof error === "string" ? error : String((error as { message?: unknown }).message ?? JSON.stringify(error));
    throw new GatewayError("internal", `The model server reported an error: ${abridge(message, 300)}`);
  }
  return json as Record<string, unknown>;
}

/** Records a chunk in the step's result and yields its text and reasoning. */
export function* applyChunk(
  chunk: Record<string, unknown>,
  result: StepResult,
  calls: PartialCalls,
): Generator<RuntimeEvent> {
  if (typeof chunk.model === "string" && chunk.model !== "") result.model = chunk.model;
  const usage = chunk.usage as Record<string, unknown> | null | undefined;
  if (usage && typeof usage === "object") {
    result.usage = reportedUsage({
      prompt: usage.prompt_tokens,
      completion: usage.completion_tokens,
      total: usage.total_tokens,
      cost: usage.cost,
    });
  }
  const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<Record<string, unknown>>) : [];
  const choice = choices.find((c) => (c.index ?? 0) === 0) ?? choices[0];
  if (!choice) return;
  if (typeof choice.finish_reason === "string") result.finishReason = choice.finish_reason;
  const delta = (choice.delta ?? {}) as Record<string, unknown>;
  // vLLM sends the same reasoning under both names; take one so it is not doubled.
  const reasoning = [delta.reasoning_content, delta.reasoning].find((r) => typeof r === "string" && r !== "") as
    | string
    | undefined;
  if (reasoning) yield { type: "reasoning", delta: reasoning };
  if (typeof delta.content === "string" && delta.content !== "") {
    const first = result.text === "";
    result.text += delta.content;
    yield { type: "text", delta: first ? result.separator + delta.content : delta.content };
  }
  if (Array.isArray(delta.tool_calls)) addToolCallFragments(delta.tool_calls as Array<Record<string, unknown>>, calls);
}

function addToolCallFragments(fragments: Array<Record<string, unknown>>, calls: PartialCalls): void {
  for (const fragment of fragments) {
    const fn = (fragment.function ?? {}) as { name?: unknown; arguments?: unknown };
    const id = typeof fragment.id === "string" && fragment.id !== "" ? fragment.id : undefined;
    const slot = slotOf(fragment.index, id, calls);
    let call = calls.get(slot);
    if (call === undefined) {
      if (calls.size >= MAX_TOOL_CALLS_PER_STEP) throw tooManyCalls();
      call = { name: "", arguments: "" };
      calls.set(slot, call);
    }
    if (id !== undefined && call.id === undefined) call.id = id;
    if (typeof fn.name === "string" && fn.name !== "" && call.name === "") call.name = fn.name;
    if (typeof fn.arguments === "string") call.arguments += fn.arguments;
    else if (fn.arguments && typeof fn.arguments === "object") call.arguments += JSON.stringify(fn.arguments);
  }
}

/**
 * Where a fragment belongs. Most servers number the calls; a few omit `index`, sending each call
 * whole or by id. A number outside 0 to {@link MAX_TOOL_CALLS_PER_STEP} - 1 ends the turn.
 */
function slotOf(index: unknown, id: string | undefined, calls: PartialCalls): number {
  if (typeof index === "number") {
    if (!Number.isSafeInteger(index) || index < 0 || index >= MAX_TOOL_CALLS_PER_STEP) {
      throw new GatewayError(
        "internal",
        `The model server sent a tool call numbered ${abridge(String(index), 40)}; at most ${MAX_TOOL_CALLS_PER_STEP} calls (0 to ${MAX_TOOL_CALLS_PER_STEP - 1}) are taken from one model call`,
      );
    }
    return index;
  }
  const last = calls.size === 0 ? -1 : Math.max(...calls.keys());
  if (id !== undefined) {
    for (const [slot, call] of calls) if (call.id === id) return slot;
    return last + 1;
  }
  return Math.max(last, 0);
}

function tooManyCalls(): GatewayError {
  return new GatewayError(
    "internal",
    `The model server asked for more than ${MAX_TOOL_CALLS_PER_STEP} tool calls in one model call; the turn was ended`,
  );
}

/** The assembled calls that have a name, each with an id. */
export function finishToolCalls(calls: PartialCalls): ToolCallWire[] {
  return (
    [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => call)
      .filter((c) => c.name !== "")
      // Ids pair each result with its call across the whole turn, so a missing one must stay unique.
      .map((c) => ({
        id: c.id ?? `call_${randomUUID().slice(0, 8)}`,
        type: "function" as const,
        function: { name: c.name, arguments: c.arguments },
      }))
  );
}
