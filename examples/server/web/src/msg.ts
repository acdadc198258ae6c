// A message as the UI holds it: made from a history item or a stored frame, with its tool rows,
// and brought up to date with the gateway's running turn when a device joins mid-answer.
import type { AnsweredAsk, HistoryItem, MediaRef, MessageStatus, RuntimeInfo, ToolCall } from "chat-gateway";
import type { RunningTurn } from "chat-gateway/client";

export interface ToolRow {
  index: number;
  name: string;
  preview: string;
  /** The arguments; a string when the gateway cut them (docs/PROTOCOL.md §14.1). */
  args: Record<string, unknown> | string;
  output?: unknown;
  duration?: number;
  ok?: boolean;
  truncated?: boolean;
}

export interface Msg {
  message_id: string;
  role: "user" | "assistant";
  text: string;
  reasoning: string;
  ts: number;
  media: MediaRef[];
  runtime?: RuntimeInfo;
  /** Model and tokens of an answer, as the gateway reports them (docs/PROTOCOL.md §4.2). */
  model?: string;
  tokens?: number;
  status?: MessageStatus;
  streaming: boolean;
  tools: ToolRow[];
  commentary: string[];
  /** A gateway command (`/stop`, `/approve`, …): shown as one small line (docs/PROTOCOL.md §14.2). */
  command?: boolean;
  /** The answer's asks as they ended, one small line each (docs/PROTOCOL.md §14.5). */
  asks: AnsweredAsk[];
}

/** A message as history or a `message` frame gives it. */
export function fromHistory(item: HistoryItem): Msg {
  return {
    message_id: item.message_id,
    role: item.role,
    text: item.text,
    reasoning: item.reasoning ?? "",
    ts: item.ts,
    media: item.media ?? [],
    runtime: item.runtime,
    model: item.model,
    tokens: item.tokens,
    status: item.status,
    streaming: item.status === "streaming",
    tools: (item.tools ?? []).map(toolRow),
    commentary: [],
    ...(item.command ? { command: true } : {}),
    asks: item.asks ?? [],
  };
}

export function toolRow(t: ToolCall): ToolRow {
  return {
    index: t.index,
    name: t.name,
    preview: t.preview,
    args: t.args,
    output: t.output,
    duration: t.duration,
    ok: t.ok,
    ...(t.truncated ? { truncated: true } : {}),
  };
}

/** An answer known by its id alone: a frame of it came before its message. */
export function blankAnswer(id: string): Msg {
  return {
    message_id: id,
    role: "assistant",
    text: "",
    reasoning: "",
    ts: Date.now(),
    media: [],
    streaming: true,
    tools: [],
    commentary: [],
    asks: [],
  };
}

/**
 * Takes a running turn's text so far and tools into its message (docs/PROTOCOL.md §14.3), never
 * shortening what is shown; true when the message changed.
 */
export function applyRunning(msg: Msg, turn: RunningTurn): boolean {
  let changed = !msg.streaming || msg.text.length < turn.text.length;
  msg.streaming = true;
  if (msg.text.length < turn.text.length) msg.text = turn.text;
  if (msg.reasoning.length < turn.reasoning.length) msg.reasoning = turn.reasoning;
  for (const tool of turn.tools) {
    let row = msg.tools.find((t) => t.index === tool.index);
    if (!row) {
      row = { index: tool.index, name: tool.name, preview: tool.preview, args: tool.args };
      msg.tools.push(row);
      changed = true;
    }
    // The live state wins: a history page taken mid-turn shows a running tool as failed (docs/PROTOCOL.md §14.1).
    if (row.ok === tool.ok && row.duration === tool.duration) continue;
    Object.assign(row, { output: tool.output, duration: tool.duration, ok: tool.ok });
    changed = true;
  }
  msg.tools.sort((a, b) => a.index - b.index);
  return changed;
}
