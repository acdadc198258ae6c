// The lane on screen is remembered per browser, so a reload opens it again.
import type { LaneRef } from "./store.js";

const LAST_LANE_KEY = "chat-gateway:last-lane";

export function rememberLane(lane: LaneRef): void {
  try {
    localStorage.setItem(LAST_LANE_KEY, JSON.stringify({ chat_id: lane.chat_id, thread_id: lane.thread_id }));
  } catch {
    // Not remembered: fine.
  }
}

export function readLastLane(): LaneRef | undefined {
  try {
    const raw = localStorage.getItem(LAST_LANE_KEY);
    const value = raw ? (JSON.parse(raw) as { chat_id?: unknown; thread_id?: unknown }) : undefined;
    if (value && typeof value.chat_id === "string")
      return { chat_id: value.chat_id, thread_id: typeof value.thread_id === "string" ? value.thread_id : null };
  } catch {
    // Ignore a broken entry.
  }
  return undefined;
}
