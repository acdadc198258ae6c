/**
 * The read watermarks of {@link memoryStorage} (the `readState` capability, docs/PROTOCOL.md §15):
 * one mark per lane, moved only forward by `(ts, message_id)`.
 * @module
 */
import type { StoredMessage } from "chat-gateway";
import type { LaneUnread, ReadMark } from "chat-gateway/storage";

/** A lane's key in the map of marks. */
export function laneKey(lane: { chat_id: string; thread_id: string | null }): string {
  return JSON.stringify([lane.chat_id, lane.thread_id ?? null]);
}

/** True when `a` comes after `b` by `(ts, message_id)`. */
export function isAfter(a: { ts: number; message_id: string }, b: { ts: number; message_id: string }): boolean {
  return a.ts !== b.ts ? a.ts > b.ts : a.message_id > b.message_id;
}

/** True when the mark would move the lane's watermark forward. */
export function movesForward(marks: Map<string, ReadMark>, mark: ReadMark): boolean {
  const stored = marks.get(laneKey(mark));
  return !stored || isAfter(mark, stored);
}

/** A deleted channel's watermarks go with it: those of its flat lane and of its threads. */
export function forgetMarks(marks: Map<string, ReadMark>, gone: ReadonlySet<string>): void {
  for (const [key, mark] of marks)
    if (gone.has(mark.chat_id) || (mark.thread_id !== null && gone.has(mark.thread_id))) marks.delete(key);
}

/**
 * Assistant messages newer than their lane's mark, per lane, each at most `cap`. A scan of the
 * owner's messages: the reference implementation keeps no index (the SQL storages count by one).
 */
export function countUnread(
  messages: Iterable<StoredMessage>,
  marks: Map<string, ReadMark>,
  cap: number,
): LaneUnread[] {
  const counts = new Map<string, LaneUnread>();
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    const key = laneKey(m);
    const mark = marks.get(key);
    if (mark && !isAfter(m, mark)) continue;
    const lane = counts.get(key) ?? { chat_id: m.chat_id, thread_id: m.thread_id ?? null, unread: 0 };
    lane.unread = Math.min(cap, lane.unread + 1);
    counts.set(key, lane);
  }
  return [...counts.values()];
}
