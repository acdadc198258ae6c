/**
 * The last line of defence of one connection (docs/PROTOCOL.md §4.2, §5): no stored frame's `seq`
 * reaches it twice, and no frame of an answer reaches it after that answer's final frame. The root
 * of both is in the storage (lane tokens, one final per answer); this keeps a device whole when a
 * bus replays what it already carried, or a process that lost its lane has frames in flight.
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { Seq } from "../protocol/ids.js";

/** The live frames that show an answer still running; each names its `message_id`. */
const RUNNING_ANSWER = new Set(["message.start", "message.update", "tool.start", "tool.end", "commentary"]);

/** How many recent seqs and ended answers a connection remembers: bounded memory per connection. */
const REMEMBERED_SEQS = 1_024;
const REMEMBERED_ENDS = 256;

/** Adds to a bounded set, forgetting the oldest entry past `max`. */
function remember<T>(set: Set<T>, value: T, max: number): void {
  set.add(value);
  if (set.size > max) set.delete(set.values().next().value as T);
}

function answerId(frame: OutgoingFrame): string | undefined {
  const id = frame.payload?.message_id;
  return typeof id === "string" ? id : undefined;
}

/** What one connection was sent, as far as the two rules need. */
export class AnswerGuard {
  readonly #seqs = new Set<Seq>();
  readonly #ended = new Set<string>();

  /** True when the frame must not go out: its seq went out already, or its answer has ended here. */
  refuses(frame: OutgoingFrame): boolean {
    if (frame.seq !== undefined && this.#seqs.has(frame.seq)) return true;
    const id = answerId(frame);
    if (id === undefined || !this.#ended.has(id)) return false;
    return RUNNING_ANSWER.has(frame.type) || frame.type === "message.stop";
  }

  /** The frame went out: its seq, and its answer's end when it is a final. */
  sent(frame: OutgoingFrame): void {
    if (frame.seq !== undefined) remember(this.#seqs, frame.seq, REMEMBERED_SEQS);
    const id = answerId(frame);
    if (id !== undefined && frame.type === "message.stop") remember(this.#ended, id, REMEMBERED_ENDS);
  }
}
