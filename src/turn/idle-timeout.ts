/**
 * The idle timeout of a turn: how long the runtime may take for its next event. It does not run
 * while the turn waits for the person to answer an ask (docs/PROTOCOL.md §11).
 * @module
 */
import type { Clock, ClockTimer } from "../support/clock.js";

/** A resettable wait for the runtime's next event that can be paused. */
export class IdleTimeout {
  readonly #ms: number;
  #paused = 0;
  readonly #clock: Clock;
  #timer: ClockTimer | undefined;
  #fire: (() => void) | undefined;

  constructor(ms: number, clock: Clock) {
    this.#ms = ms;
    this.#clock = clock;
  }

  /** Resolves "timeout" when the next event takes longer than the timeout, not counting pauses. */
  next(): Promise<"timeout"> {
    this.clear();
    return new Promise((resolve) => {
      this.#fire = () => resolve("timeout");
      this.#arm();
    });
  }

  /** True while an ask is open. */
  get paused(): boolean {
    return this.#paused > 0;
  }

  /** The event came (or the turn ended): stop waiting. */
  clear(): void {
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#fire = undefined;
  }

  /** An ask opened: the clock stops until every open ask is answered. */
  pause(): void {
    this.#paused++;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** An ask closed: the clock starts again, from zero, once no ask is open. */
  resume(): void {
    this.#paused = Math.max(0, this.#paused - 1);
    this.#arm();
  }

  #arm(): void {
    if (this.#paused > 0 || !this.#fire || this.#timer) return;
    const fire = this.#fire;
    this.#timer = this.#clock.setTimeout(fire, this.#ms);
  }
}
