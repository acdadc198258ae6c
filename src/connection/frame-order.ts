/**
 * The stored frames of one connection, which reach it two ways: live from the bus, and replayed
 * from storage by `sync`. This keeps each seq to one delivery and loses none, whatever the overlap.
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { RequestId, Seq } from "../protocol/ids.js";

/** Where live delivery and replay meet for one connection. */
export class FrameOrder {
  /** Live stored frames held back while `hello.ok`'s cursor is read or a sync replays. */
  #held: OutgoingFrame[] | undefined;
  /**
   * The cursor hello.ok gave, raised by each sync to what it replayed: a stored frame at or below
   * it that arrives live (committed before the cursor was read, published after) is one the device
   * has, or gets from sync, already.
   */
  #floor = 0;
  /**
   * The stored frames this connection already got live form one contiguous range of seqs (a gap
   * starts a new range), so a replay can skip exactly those and send nothing twice.
   */
  #liveFirst = 0;
  #liveLast = -1;

  /** From now until {@link release}, live stored frames collect in the returned list. */
  hold(): OutgoingFrame[] {
    const held: OutgoingFrame[] = [];
    this.#held = held;
    return held;
  }

  release(): void {
    this.#held = undefined;
  }

  /** `hello.ok` went out with `cursor`. */
  start(cursor: Seq): void {
    this.#floor = cursor;
  }

  /** A frame from the bus: true when the device has it already (at or below the floor) or it is held back. */
  absorbs(frame: OutgoingFrame): boolean {
    if (frame.seq !== undefined && frame.seq <= this.#floor) return true;
    if (this.#held && frame.seq !== undefined) {
      this.#held.push(frame);
      return true;
    }
    return false;
  }

  /** A stored frame this connection caused that answers no request id: true when it is held back like a live one. */
  holds(frame: OutgoingFrame, requestId: RequestId | undefined): boolean {
    if (this.#held && frame.seq !== undefined && requestId === undefined) {
      this.#held.push(frame);
      return true;
    }
    return false;
  }

  /** `frame` goes out live now. */
  sentLive(frame: OutgoingFrame): void {
    if (frame.seq === undefined) return;
    if (frame.seq !== this.#liveLast + 1) this.#liveFirst = frame.seq;
    this.#liveLast = frame.seq;
  }

  /** True when a replayed frame already went out live. */
  sentAlready(frame: OutgoingFrame): boolean {
    const seq = frame.seq ?? 0;
    return seq >= this.#liveFirst && seq <= this.#liveLast;
  }

  /**
   * Runs a replay (`run` resolves with the last seq it sent) while holding back live stored frames,
   * then hands those past it to `replayed`.
   */
  async replay(run: () => Promise<number>, replayed: (frame: OutgoingFrame) => void): Promise<void> {
    const held = this.hold();
    let last = -1;
    try {
      last = await run();
      this.#floor = Math.max(this.#floor, last);
    } finally {
      this.release();
      // On failure every held frame still goes out: a duplicate is harmless, a loss is not.
      for (const frame of held) if ((frame.seq ?? 0) > last) replayed(frame);
    }
  }
}
