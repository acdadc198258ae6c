/**
 * Unread counts per channel entry (docs/PROTOCOL.md §15), as `channel.list` gives them and kept
 * current from live frames: a new answer adds one to its thread and its channel, a `read` that
 * reaches a lane's newest answer clears that lane. What the frames alone cannot settle (a read
 * of an older answer, a deletion, a count at the cap) asks for a fresh `channel.list`.
 * @module
 */
import type { ServerFrame } from "chat-gateway/protocol";

/** The most `unread` the gateway reports (docs/PROTOCOL.md §15). */
const CAP = 999;

interface Point {
  ts: number;
  message_id: string;
}

const after = (a: Point, b: Point) => (a.ts !== b.ts ? a.ts > b.ts : a.message_id > b.message_id);
const laneKey = (chatId: string, threadId: string | null | undefined) => `${chatId}\u0000${threadId ?? ""}`;

/** What a frame did to the counts: nothing, changed them, or left them unknown until a fresh `channel.list`. */
export type UnreadChange = "none" | "changed" | "stale";

/** Counts by `chat_id` (a channel or a thread), from `channel.list` on. */
export class UnreadCounts {
  readonly #counts = new Map<string, number>();
  /** A thread's channel. */
  readonly #parents = new Map<string, string>();
  /** Per lane, the newest answer seen live and the watermark heard of. */
  readonly #newest = new Map<string, Point>();
  readonly #marks = new Map<string, Point>();
  #known = false;
  /** A fresh `channel.list` is on its way; `#again`: another is wanted after it. */
  #refreshing = false;
  #again = false;

  /** `refresh` asks for a `channel.list`, whose response comes back through {@link apply}. */
  readonly #refresh: () => Promise<unknown>;
  constructor(refresh: () => Promise<unknown>) {
    this.#refresh = refresh;
  }

  /** Applies a frame, asking for a fresh `channel.list` when the counts became unknown; true when they changed. */
  handle(frame: ServerFrame): boolean {
    const change = this.apply(frame);
    if (change === "stale") this.resync();
    return change === "changed";
  }

  /** Asks for a fresh `channel.list` once counts are held (after a reconnect's sync, say); one at a time. */
  resync(): void {
    if (!this.#known) return;
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    this.#refreshing = true;
    void this.#refresh()
      .catch(() => undefined)
      .finally(() => {
        this.#refreshing = false;
        if (this.#again) {
          this.#again = false;
          this.resync();
        }
      });
  }

  /** Whether a `channel.list` has given the counts yet. */
  get known(): boolean {
    return this.#known;
  }

  /** Every entry's count, by `chat_id`. */
  all(): Record<string, number> {
    return Object.fromEntries(this.#counts);
  }

  apply(frame: ServerFrame): UnreadChange {
    switch (frame.type) {
      case "channel.list":
        return this.#list(frame.payload.channels);
      case "channel.created": {
        const p = frame.payload;
        if (p.parent_chat_id) this.#parents.set(p.chat_id, p.parent_chat_id);
        if (!this.#known || this.#counts.has(p.chat_id)) return "none";
        this.#counts.set(p.chat_id, 0);
        return "changed";
      }
      case "channel.deleted":
        return this.#counts.delete(frame.payload.chat_id) ? "changed" : "none";
      case "message.deleted":
        return this.#known ? "stale" : "none";
      case "message": {
        const p = frame.payload;
        return p.role === "assistant"
          ? this.#answer(p.chat_id, p.thread_id, { ts: p.ts, message_id: p.message_id })
          : "none";
      }
      case "message.stop": {
        const p = frame.payload;
        return this.#answer(p.chat_id, p.thread_id, { ts: p.ts, message_id: p.message_id });
      }
      case "read": {
        const p = frame.payload;
        return this.#read(p.chat_id, p.thread_id, { ts: p.ts, message_id: p.message_id });
      }
      default:
        return "none";
    }
  }

  #list(
    channels: Array<{ chat_id: string; kind?: string; parent_chat_id?: string | null; unread?: number }>,
  ): UnreadChange {
    this.#counts.clear();
    for (const c of channels) {
      this.#counts.set(c.chat_id, c.unread ?? 0);
      if (c.parent_chat_id) this.#parents.set(c.chat_id, c.parent_chat_id);
    }
    this.#known = true;
    return "changed";
  }

  #answer(chatId: string, threadId: string | null | undefined, point: Point): UnreadChange {
    const lane = laneKey(chatId, threadId);
    const newest = this.#newest.get(lane);
    if (newest && !after(point, newest)) return "none";
    this.#newest.set(lane, point);
    const mark = this.#marks.get(lane);
    if (!this.#known || (mark && !after(point, mark))) return "none";
    for (const id of threadId ? [threadId, chatId] : [chatId])
      this.#counts.set(id, Math.min(CAP, (this.#counts.get(id) ?? 0) + 1));
    return "changed";
  }

  #read(chatId: string, threadId: string | null | undefined, point: Point): UnreadChange {
    const lane = laneKey(chatId, threadId);
    const mark = this.#marks.get(lane);
    if (mark && !after(point, mark)) return "none";
    this.#marks.set(lane, point);
    if (!this.#known) return "none";
    const newest = this.#newest.get(lane);
    const laneCount = threadId
      ? (this.#counts.get(threadId) ?? 0)
      : (this.#counts.get(chatId) ?? 0) - this.#threadsOf(chatId);
    if (laneCount === 0) return "none";
    // Older answers may stay unread, or the count stopped at the cap: only the gateway knows.
    if (!newest || after(newest, point) || (this.#counts.get(chatId) ?? 0) >= CAP) return "stale";
    this.#counts.set(chatId, (this.#counts.get(chatId) ?? 0) - laneCount);
    if (threadId) this.#counts.set(threadId, 0);
    return "changed";
  }

  /** The unread of a channel's threads together. */
  #threadsOf(chatId: string): number {
    let sum = 0;
    for (const [thread, parent] of this.#parents) if (parent === chatId) sum += this.#counts.get(thread) ?? 0;
    return sum;
  }
}
