/**
 * The byte cap of a `history` page (`historyMaxBytes`): a page of long messages is cut short from
 * its oldest end, so one request can never be answered by a frame of tens of megabytes.
 * @module
 */
import type { HistoryItem } from "../contracts/records.js";

/** The items kept for the page (oldest first) and whether older ones were left out. */
export interface FittedPage<T extends HistoryItem> {
  items: T[];
  /** True when at least one older item of the storage page did not fit. */
  cut: boolean;
}

/**
 * Keep the newest items whose JSON fits in `maxBytes`. Always keeps at least the newest one: if it
 * alone is too big its `text` (then `reasoning`) is shortened to fit and it is marked `truncated`,
 * so the client still moves on (its `oldest_message_id` is the next `before_message_id`).
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

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/** The item with `text` and `reasoning` cut (text first kept, reasoning gets what is left). */
function truncateToFit<T extends HistoryItem>(item: T, maxBytes: number): T {
  const bare = { ...item, text: "", reasoning: "", truncated: true };
  let room = maxBytes - jsonBytes(bare);
  const text = longestPrefix(item.text, room);
  room -= jsonBytes(text) - 2;
  const reasoning = longestPrefix(item.reasoning, room);
  return { ...bare, text, reasoning };
}

/** The longest prefix of `text` whose JSON string (escapes included, quotes excluded) fits in `room` bytes. */
function longestPrefix(text: string, room: number): string {
  if (room <= 0 || text === "") return "";
  // Every code unit takes at least one byte in JSON, so no prefix longer than `room` can fit.
  let lo = 0;
  let hi = Math.min(text.length, room);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (jsonBytes(text.slice(0, mid)) - 2 <= room) lo = mid;
    else hi = mid - 1;
  }
  // Never end on the first half of a surrogate pair.
  const code = text.charCodeAt(lo - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? lo - 1 : lo);
}
