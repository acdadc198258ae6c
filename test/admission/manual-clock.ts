// A clock the test moves by hand: time stands still until `advance`, which runs every timer that
// falls due on the way, each at its own time and in order. Timing tests then assert order and counts,
// never a window of milliseconds.
import type { Clock, ClockTimer } from "../../src/support/clock.js";

interface Timer {
  at: number;
  readonly every: number | undefined;
  readonly callback: () => void;
  readonly order: number;
  cleared: boolean;
}

export interface ManualClock extends Clock {
  /** Moves the time on by `ms`, running the timers that fall due meanwhile. */
  advance(ms: number): void;
  /** Timers set and not cleared or run. */
  readonly pending: number;
}

export function manualClock(start = 1_000_000): ManualClock {
  let now = start;
  let order = 0;
  const timers = new Set<Timer>();
  const set = (callback: () => void, ms: number, every: number | undefined): ClockTimer => {
    const timer: Timer = { at: now + Math.max(0, ms), every, callback, order: order++, cleared: false };
    timers.add(timer);
    return timer;
  };
  const clear = (timer: ClockTimer | undefined) => {
    if (!timer) return;
    (timer as Timer).cleared = true;
    timers.delete(timer as Timer);
  };
  const next = (until: number): Timer | undefined =>
    [...timers].filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.order - b.order)[0];
  return {
    now: () => now,
    setTimeout: (callback, ms) => set(callback, ms, undefined),
    setInterval: (callback, ms) => set(callback, ms, Math.max(1, ms)),
    clearTimeout: clear,
    clearInterval: clear,
    get pending() {
      return timers.size;
    },
    advance(ms) {
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
