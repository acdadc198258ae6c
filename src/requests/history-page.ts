/**
 * The byte cap of a `history` page (`historyMaxBytes`): a page of long messages is cut short from
 * its oldest end, and a single message over the cap is cut itself, tool calls included, so one
 * request can never be answered by a frame of tens of megabytes, whatever a storage holds.
 * @module
 */
import type { HistoryItem } from "../contracts/records.js";
import { fillTools, planToolCut } from "../outbox/tool-cut.js";
import { jsonBytes, longestJsonPrefix } from "../support/json-text.js";

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
 * The item cut to fit in `maxBytes`: what room there is goes to `text` first, then `reasoning`,
 * then its tools' `args`, then their `output`s (so outputs are cut first), each in call order; a
 * field that does not fit is cut at a character boundary and its entry marked `truncated`. When not
 * even the tools' entries without their fields fit, the later ones are left out.
 */
function truncateToFit<T extends HistoryItem>(item: T, maxBytes: number): T {
  const bare: T = { ...item, text: "", reasoning: "", truncated: true };
  if (item.tools) bare.tools = [];
  // The tools' entries are kept before the text; their fields get what the text and reasoning leave.
  const plan = planToolCut(item.tools ?? [], maxBytes - jsonBytes(bare));
  let room = plan.room;
  const text = longestJsonPrefix(item.text, room);
  room -= jsonBytes(text) - 2;
  const reasoning = longestJsonPrefix(item.reasoning, room);
  room -= jsonBytes(reasoning) - 2;
  return item.tools ? { ...bare, text, reasoning, tools: fillTools(plan.kept, room) } : { ...bare, text, reasoning };
}
