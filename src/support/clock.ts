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
  /** Runs `callback` once, `ms` from now. */
  setTimeout(callback: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
  /** Runs `callback` every `ms` from now on. */
  setInterval(callback: () => void, ms: number): ClockTimer;
  clearInterval(timer: ClockTimer | undefined): void;
}

/**
 * The process's own clock: `performance` time (monotonic, unlike `Date.now()`, which a system clock
 * change moves) and Node's timers, which do not hold the process open.
 */
export const realClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
};

/** Resolves `ms` from now on `clock`: a pause between retries or polls. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
