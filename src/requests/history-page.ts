/**
 * The byte cap of a `history` page (`historyMaxBytes`): a page of long messages is cut short from
 * its oldest end, and a single message over the cap is cut itself, tool calls included, so one
 * request can never be answered by a frame of tens of megabytes, whatever a storage holds.
 * @module
 */
import type { HistoryItem, ToolCall } from "../contracts/records.js";
import { fieldBytes, jsonBytes, jsonText, longestJsonPrefix } from "../support/json-text.js";

/** The items kept for the page (oldest first) and whether older ones were left out. */
export interface FittedPage<T extends HistoryItem> {
  items: T[];
  /** True when at least one older item of the storage page did not fit. */
  cut: boolean;
}

/**
 * Keep the newest items whose JSON fits in `maxBytes`. Always keeps at least the newest one: if it
 * alone is too big it is cut to fit (see {@link truncateToFit}) and marked `truncated`, so the
 * client still moves on (its `oldest_message_id` is the next `before_message_id`).
 */
export function fitHistory<T extends HistoryItem>(items: T[], maxBytes: number): FittedPage<T> {
  const kept: T[] = [];
  let used = 0;
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    // +1 for the comma between array elements.
    const size = jsonBytes(item) + 1;
    if (used + size > maxBytes) {
      if (kept.length === 0) return { items: [truncateToFit(item, maxBytes)], cut: i > 0 };
      return { items: kept.reverse(), cut: true };
    }
    kept.push(item);
    used += size;
  }
  return { items: kept.reverse(), cut: false };
}

/**
 * A tool entry with its `args` (and a non-null `output`) emptied. Measured with `truncated`, which
 * it gains only when a field is actually cut.
 */
function bareTool(tool: ToolCall): ToolCall {
  return { ...tool, args: "", output: tool.output === null ? null : "", truncated: true };
}

/**
 * The tool entries that fit in `room` bytes with their fields emptied (the first ones: calls past
 * them are left out), and the room they leave.
 */
function bareTools(tools: ToolCall[], room: number): { kept: ToolCall[]; room: number } {
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
 * The item cut to fit in `maxBytes`: what room there is goes to `text` first, then `reasoning`,
 * then its tools' `args`, then their `output`s (so outputs are cut first), each in call order; a
 * field that does not fit is cut at a character boundary and its entry marked `truncated`. When not
 * even the tools' entries without their fields fit, the later ones are left out.
 */
function truncateToFit<T extends HistoryItem>(item: T, maxBytes: number): T {
  const bare: T = { ...item, text: "", reasoning: "", truncated: true };
  if (item.tools) bare.tools = [];
  const tools = bareTools(item.tools ?? [], maxBytes - jsonBytes(bare));
  let room = tools.room;
  const text = longestJsonPrefix(item.text, room);
  room -= jsonBytes(text) - 2;
  const reasoning = longestJsonPrefix(item.reasoning, room);
  room -= jsonBytes(reasoning) - 2;
  const kept = tools.kept.map((tool) => ({ ...tool }));
  for (const tool of kept) room -= fitField(tool, "args", room);
  // A null output was measured as it is: nothing to cut.
  for (const tool of kept) if (tool.output !== null) room -= fitField(tool, "output", room);
  return item.tools ? { ...bare, text, reasoning, tools: kept } : { ...bare, text, reasoning };
}
