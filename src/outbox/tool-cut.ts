/**
 * Cutting a stored answer's tool calls to the room a frame has for them (docs/PROTOCOL.md §5): a
 * `history` item over its page's cap, and any frame over `max_frame_bytes`, such as an answer
 * stored before the 256 KiB bound of docs/PROTOCOL.md §14.1. Every entry keeps its place with its
 * `args` and `output` emptied first (the later calls are left out when not even those fit), then
 * the room goes to the `args` and then to the `output`s, in call order, so outputs are cut first.
 * A field cut this way is cut at a character boundary and its entry marked `truncated`.
 * @module
 */
import type { ToolCall } from "../contracts/records.js";
import { fieldBytes, jsonBytes, jsonText, longestJsonPrefix } from "../support/json-text.js";

/** The entries kept with their fields emptied, and the bytes of room they leave for those fields. */
export interface ToolCutPlan {
  kept: ToolCall[];
  room: number;
}

/**
 * A tool entry with its `args` (and a non-null `output`) emptied. Measured with `truncated`, which
 * it gains only when a field is actually cut.
 */
function bareTool(tool: ToolCall): ToolCall {
  return { ...tool, args: "", output: tool.output === null ? null : "", truncated: true };
}

/**
 * The first entries of `tools` that fit in `room` bytes (what an empty `tools` array leaves) with
 * their fields emptied, and the room they leave: the first step of a cut, before the caller hands
 * what is left to other fields or to {@link fillTools}.
 */
export function planToolCut(tools: ToolCall[], room: number): ToolCutPlan {
  let left = room;
  let count = 0;
  for (const tool of tools) {
    // +1 for the comma between array elements.
    const size = jsonBytes(bareTool(tool)) + 1;
    if (size > left) break;
    left -= size;
    count++;
  }
  return { kept: tools.slice(0, count), room: left };
}

/**
 * Keep `tool`'s `field` whole when its bytes beyond an empty field fit in `room`, else cut its text
 * to `room` and mark the entry `truncated`. Returns the bytes it took.
 */
function fitField(tool: ToolCall, field: "args" | "output", room: number): number {
  const value = tool[field];
  const size = fieldBytes(value) - 2;
  if (size <= room) return Math.max(0, size);
  const short = longestJsonPrefix(typeof value === "string" ? value : jsonText(value), room);
  tool[field] = short;
  tool.truncated = true;
  return jsonBytes(short) - 2;
}

/**
 * The entries `planToolCut` kept, with `room` bytes handed to their `args`, then to their
 * `output`s, in call order. Copies: the stored entries are left as they are.
 */
export function fillTools(kept: ToolCall[], room: number): ToolCall[] {
  const tools = kept.map((tool) => ({ ...tool }));
  let left = room;
  for (const tool of tools) left -= fitField(tool, "args", left);
  // A null output was measured as it is: nothing to cut.
  for (const tool of tools) if (tool.output !== null) left -= fitField(tool, "output", left);
  return tools;
}

/** `tools` cut to fit in `room` bytes beyond an empty `tools` array. */
export function cutTools(tools: ToolCall[], room: number): ToolCall[] {
  const plan = planToolCut(tools, room);
  return fillTools(plan.kept, plan.room);
}
