// Gateway frames and history items as ACP `session/update`s (docs/PROTOCOL.md §20).
import type { SessionUpdate, ToolCallContent } from "@agentclientprotocol/sdk";
import type { HistoryPayload, ToolEndPayload, ToolStartPayload } from "chat-gateway/client";

type HistoryItem = HistoryPayload["messages"][number];
type StoredTool = NonNullable<HistoryItem["tools"]>[number];

/** The tool call's id in ACP: unique per answer and call, the same live and in a replay. */
export function toolCallId(messageId: string, index: number): string {
  return `${messageId}:${index}`;
}

/** A chunk of text as the given kind of message chunk. */
export function chunk(
  kind: "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk",
  text: string,
  messageId?: string,
): SessionUpdate {
  return { sessionUpdate: kind, content: { type: "text", text }, ...(messageId ? { messageId } : {}) };
}

/** A tool's output as the text content of its `tool_call_update`. */
function outputContent(output: unknown): ToolCallContent[] {
  if (output === null || output === undefined) return [];
  const text = typeof output === "string" ? output : JSON.stringify(output, null, 2);
  return [{ type: "content", content: { type: "text", text } }];
}

/** `tool.start` → `tool_call` in progress, titled with its preview. */
export function toolCallStarted(
  start: Pick<ToolStartPayload, "message_id" | "index" | "name" | "preview"> & { args: unknown },
): SessionUpdate {
  return {
    sessionUpdate: "tool_call",
    toolCallId: toolCallId(start.message_id, start.index),
    title: start.preview || start.name,
    kind: "other",
    status: "in_progress",
    rawInput: start.args,
  };
}

/** `tool.end` → `tool_call_update`, completed or failed, with the output as content. */
export function toolCallEnded(end: Pick<ToolEndPayload, "message_id" | "index" | "output" | "ok">): SessionUpdate {
  return {
    sessionUpdate: "tool_call_update",
    toolCallId: toolCallId(end.message_id, end.index),
    status: end.ok ? "completed" : "failed",
    content: outputContent(end.output),
    rawOutput: end.output,
  };
}

/** A stored tool call of an answer, replayed as its start and its end. */
function storedTool(messageId: string, tool: StoredTool): SessionUpdate[] {
  return [
    toolCallStarted({ message_id: messageId, ...tool }),
    toolCallEnded({ message_id: messageId, index: tool.index, output: tool.output, ok: tool.ok }),
  ];
}

/** One history message as the updates that replay it: a user chunk, or reasoning, tools and text. */
export function replayUpdates(item: HistoryItem): SessionUpdate[] {
  if (item.role === "user") return item.text ? [chunk("user_message_chunk", item.text, item.message_id)] : [];
  const updates: SessionUpdate[] = [];
  if (item.reasoning) updates.push(chunk("agent_thought_chunk", item.reasoning, item.message_id));
  for (const tool of item.tools ?? []) updates.push(...storedTool(item.message_id, tool));
  if (item.text) updates.push(chunk("agent_message_chunk", item.text, item.message_id));
  return updates;
}
