/**
 * Earlier answers' tool calls as a model sees them again (docs/PROTOCOL.md §14): both bindings send
 * an answer that used tools as the model's own tool calls, each followed by its result, then the
 * answer's text. Arguments cut at the gateway's 16 KiB bound are sent as a JSON object saying so,
 * so the model server still receives valid JSON.
 * @module
 */
import type { HistoryItem, ToolCall } from "chat-gateway";

/** One earlier tool call in the shape both bindings need. */
export interface PastToolCall {
  /** Unique within the conversation: the answer's id and the call's index. */
  id: string;
  name: string;
  args: Record<string, unknown>;
  /** The result as text: a string output as it is, any other value as JSON, a missing one as "(no output)". */
  result: string;
  ok: boolean;
}

function argsOf(call: ToolCall): Record<string, unknown> {
  return typeof call.args === "string" ? { truncated_arguments: call.args } : call.args;
}

function resultOf(call: ToolCall): string {
  if (call.output === null || call.output === undefined) return call.ok ? "(no output)" : "(the tool did not finish)";
  const text = typeof call.output === "string" ? call.output : JSON.stringify(call.output);
  return call.truncated ? `${text}\n(cut at the gateway's 16 KiB limit)` : text;
}

/** The tool calls of a history item, empty when it has none (or is not an answer). */
export function pastToolCalls(item: HistoryItem): PastToolCall[] {
  if (item.role !== "assistant" || !item.tools?.length) return [];
  return item.tools.map((call) => ({
    id: `call_${item.message_id}_${call.index}`,
    name: call.name,
    args: argsOf(call),
    result: resultOf(call),
    ok: call.ok,
  }));
}
