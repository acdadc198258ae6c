/**
 * A clock moved by hand, for tests and simulations of a gateway (`GatewayOptions.clock`).
 * @module
 */
import type { Clock, ClockTimer } from "chat-gateway";

/** A {@link Clock} whose time stands still until {@link ManualClock.advance} moves it. */
export interface ManualClock extends Clock {
  /**
   * Moves the time on by `ms`, running every timer that falls due meanwhile, each at its own time
   * (`now()` reads its due time while it runs) and in due order, those due together in the order
   * they were set; a timer set by one of them runs too when it falls due within `ms`. Synchronous:
   * what a callback starts asynchronously (a storage write, a frame through the bus) runs after it
   * returns, on the time it stopped at.
   */
  advance(ms: number): void;
  /** Timers set and not yet cleared or run (an interval counts until it is cleared). */
  readonly pending: number;
}

interface Timer {
  at: number;
  readonly every: number | undefined;
  readonly callback: () => void;
  readonly order: number;
}

/**
 * A manual clock starting at `start` (milliseconds; default 1,000,000, so that "before" never goes
 * below zero). Given to a gateway, its time dates what is stored, and "later" becomes a call: a
 * test advances it and asserts the order and the count of what happened, never a window of
 * milliseconds. A socket still delivers in real time: the clock drives the gateway's timers only.
 *
 * ```ts
 * const clock = manualClock();
 * const gateway = createGateway({ storage, runtime, clock, maxTurnMs: 60_000 });
 * // … start a turn, then:
 * clock.advance(60_000); // the turn's limit fires now
 * ```
 */
export function manualClock(start = 1_000_000): ManualClock {
  let now = start;
  let order = 0;
  const timers = new Set<Timer>();
  const set = (callback: () => void, ms: number, every: number | undefined): ClockTimer => {
    const timer: Timer = { at: now + Math.max(0, ms), every, callback, order: order++ };
    timers.add(timer);
    return timer;
  };
  const clear = (timer: ClockTimer | undefined) => void timers.delete(timer as Timer);
  const next = (until: number): Timer | undefined => {
    let first: Timer | undefined;
    for (const t of timers)
      if (t.at <= until && (!first || t.at < first.at || (t.at === first.at && t.order < first.order))) first = t;
    return first;
  };
  return {
    now: () => now,
    setTimeout: (callback, ms) => set(callback, ms, undefined),
    // An interval of 0 would run forever within one advance: it repeats every millisecond at most.
    setInterval: (callback, ms) => set(callback, ms, Math.max(1, ms)),
    clearTimeout: clear,
    clearInterval: clear,
    get pending() {
      return timers.size;
    },
    advance(ms) {
      if (!(ms >= 0)) throw new RangeError(`manualClock: advance by 0 ms or more, got ${ms}`);
      const until = now + ms;
      for (let timer = next(until); timer; timer = next(until)) {
        now = timer.at;
        if (timer.every === undefined) timers.delete(timer);
        else timer.at += timer.every;
        timer.callback();
      }
      now = until;
    },
  };
}
