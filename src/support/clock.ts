/**
 * The clock a part of the gateway reads the time and sets its timers by. Given rather than reached
 * for, so that a test can drive it (a manual clock advanced step by step) and assert order and
 * counts instead of waiting on the wall. The gateway is given one (`GatewayOptions.clock`) and hands
 * it to every part; two readings stay on the process's own time on purpose: an id's time prefix
 * (`id-generator.ts`, only an index order) and the loop share (`loop-share.ts`, which measures how
 * long real work held the event loop, not the gateway's time).
 * @module
 */

/** A timer set by a {@link Clock}; only ever handed back to the same clock. */
export type ClockTimer = object;

/** The time, and timers on it. */
export interface Clock {
  /**
   * Milliseconds, never going back: only differences between two readings mean anything (the real
   * clock counts from the Unix epoch, with fractions).
   */
  now(): number;
  /**
   * Runs `callback` once, `ms` from now. A `background` timer does not keep the process alive by
   * itself (the real clock unrefs it): one that waits on a connection or a push, not on a turn.
   */
  setTimeout(callback: () => void, ms: number, background?: boolean): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
  /** Runs `callback` every `ms` from now on; background work that does not keep the process alive. */
  setInterval(callback: () => void, ms: number): ClockTimer;
  clearInterval(timer: ClockTimer | undefined): void;
}

/**
 * The process's own clock: `performance` time (monotonic, unlike `Date.now()`, which a system clock
 * change moves) and Node's timers. A turn's timers hold the process open, as Node's do, so a
 * script awaiting a turn sees it end by its deadline; background ones and intervals do not.
 */
export const realClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (callback, ms, background) => {
    const timer = setTimeout(callback, ms);
    return background ? timer.unref() : timer;
  },
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
};

/** Resolves `ms` from now on `clock`: a pause between retries or polls (`background`: as {@link Clock.setTimeout}). */
export function sleep(clock: Clock, ms: number, background?: boolean): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms, background));
}
