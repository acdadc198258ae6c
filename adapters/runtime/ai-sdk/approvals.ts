/**
 * Tool approval for the AI SDK binding: a tool that needs approval (ai 6's `needsApproval` on the
 * tool, or the binding's `needsApproval` option, which ai 5 has no other way to say) runs only
 * after the person approved the call through `TurnInput.ask` (docs/PROTOCOL.md §11).
 *
 * The gate sits in the tool's `execute` rather than in ai 6's approval round trip: the SDK would
 * end the run at the request and need a second `streamText` with the response, and ai 5 has no
 * such round trip at all. Inside `execute` one stream serves both majors, the call appears as a
 * `tool-call` part before the ask, and a refusal reaches the model as the call's error result.
 * @module
 */
import type { ToolSet } from "ai";
import type { ToolApproval, TurnInput } from "chat-gateway";
import { askApproval, callNeedsApproval } from "../approval.js";

/** What ai passes to `execute` besides the input (the fields read here exist in ai 5 and 6). */
interface ExecuteOptions {
  toolCallId?: string;
  messages?: unknown;
  experimental_context?: unknown;
}

type ToolNeedsApproval = boolean | ((input: unknown, options: ExecuteOptions) => boolean | PromiseLike<boolean>);
type Execute = (input: unknown, options: ExecuteOptions) => unknown;

/**
 * The tools with every one that may need approval gated; the others unchanged. Tools without
 * `execute` are run by the caller, not the SDK, so there is nothing to gate.
 */
export function gateTools(
  tools: ToolSet | undefined,
  rule: ToolApproval | undefined,
  input: TurnInput,
  preview: (name: string, args: Record<string, unknown>) => string,
): ToolSet | undefined {
  if (tools === undefined) return undefined;
  const gated: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const own = (tool as { needsApproval?: ToolNeedsApproval }).needsApproval;
    const execute = tool.execute as Execute | undefined;
    const mayAsk = own !== undefined && own !== false ? true : rule !== undefined;
    if (execute === undefined || !mayAsk) {
      gated[name] = tool;
      continue;
    }
    const needs = async (args: Record<string, unknown>, options: ExecuteOptions) =>
      (await ownNeeds(own, args, options)) || (await callNeedsApproval(rule, name, args));
    gated[name] = {
      ...tool,
      // The SDK must not also ask: this gate answers for the tool.
      needsApproval: undefined,
      execute: gatedExecute(name, execute, needs, input, preview),
    };
  }
  return gated as ToolSet;
}

async function ownNeeds(
  own: ToolNeedsApproval | undefined,
  args: Record<string, unknown>,
  options: ExecuteOptions,
): Promise<boolean> {
  if (own === undefined || typeof own === "boolean") return own === true;
  try {
    return (await own(args, options)) === true;
  } catch {
    // A check that fails cannot clear the call: ask.
    return true;
  }
}

/**
 * An `execute` that asks first when the call needs it. It is an async generator because the SDK
 * treats a returned async iterable as a streaming tool, and a wrapped tool may be one: a plain
 * result is yielded once, which the SDK reports as the final result.
 */
function gatedExecute(
  name: string,
  execute: Execute,
  needs: (args: Record<string, unknown>, options: ExecuteOptions) => Promise<boolean>,
  input: TurnInput,
  preview: (name: string, args: Record<string, unknown>) => string,
) {
  return async function* (value: unknown, options: ExecuteOptions): AsyncGenerator<unknown> {
    const args =
      value !== null && typeof value === "object" && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : { input: value };
    if (await needs(args, options)) {
      const denied = await askApproval(input, name, args, preview(name, args));
      if (denied !== undefined) throw new Error(denied);
    }
    const result = execute(value, options);
    if (result !== null && typeof result === "object" && Symbol.asyncIterator in result) {
      yield* result as AsyncIterable<unknown>;
      return;
    }
    yield await result;
  };
}
