/**
 * The bounds of one answer besides its idle timeout: how much it may say and how long it may run,
 * and how long it may keep the event loop to itself. A runtime (or the model server behind it) is
 * not trusted to end on its own.
 * @module
 */
import { LoopShare } from "../support/loop-share.js";
import type { LaneTurn } from "./lane-turn.js";
import { TOOLS_BYTES } from "./tool-calls.js";
import type { Clock, ClockTimer } from "../support/clock.js";

/** `setTimeout` fires at once for a delay past 2^31 - 1 ms; longer limits wait that long (24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

/** Limits of {@link AnswerLimits}, from the gateway options. */
export interface AnswerLimitOptions {
  maxAnswerChars: number;
  maxTurnMs: number;
  /** The gateway's clock, which the turn's time is read and its deadline set on. */
  clock: Clock;
}

/**
 * Guards one answer: ends its lane turn (abort reason `limit`) when the text and reasoning pass
 * `maxAnswerChars`, the turn passes `maxTurnMs` or its tool calls fill their bound, and says why in
 * {@link AnswerLimits.note}.
 */
export class AnswerLimits {
  /** Why the turn was ended by a limit, in words for the user; undefined while within them. */
  note: string | undefined;
  readonly #options: AnswerLimitOptions;
  readonly #turn: LaneTurn;
  #deadline: ClockTimer | undefined;
  /** Wall-clock time left when paused; undefined while the clock runs. */
  #left: number | undefined;
  #endsAt: number;
  readonly #tooLong: string;
  // A runtime that never awaits real I/O runs on microtasks alone: timers and sockets need a turn.
  readonly #share = new LoopShare();

  constructor(options: AnswerLimitOptions, turn: LaneTurn) {
    this.#options = options;
    this.#turn = turn;
    this.#tooLong = `The agent was stopped: the turn ran past the gateway's limit of ${formatDuration(options.maxTurnMs)}.`;
    this.#endsAt = options.clock.now() + options.maxTurnMs;
    this.#deadline = options.clock.setTimeout(
      () => this.#end(this.#tooLong),
      Math.min(options.maxTurnMs, MAX_TIMER_MS),
    );
  }

  /** The person is being asked: waiting for them does not count against the turn (docs/PROTOCOL.md §11). */
  pause(): void {
    if (this.#left !== undefined) return;
    this.#options.clock.clearTimeout(this.#deadline);
    this.#left = Math.max(0, this.#endsAt - this.#options.clock.now());
  }

  /** The turn goes on: the wall clock runs again with the time that was left. */
  resume(): void {
    if (this.#left === undefined) return;
    const left = this.#left;
    this.#left = undefined;
    this.#endsAt = this.#options.clock.now() + left;
    this.#deadline = this.#options.clock.setTimeout(() => this.#end(this.#tooLong), Math.min(left, MAX_TIMER_MS));
  }

  /**
   * The part of `delta` that still fits in an answer that already has `used` characters. When it
   * does not all fit, the turn is ended and the rest is dropped.
   */
  fit(used: number, delta: string): string {
    const room = this.#options.maxAnswerChars - used;
    if (delta.length <= room) return delta;
    this.#end(
      `The answer was cut off at the gateway's limit of ${this.#options.maxAnswerChars.toLocaleString("en-US")} characters.`,
    );
    if (room <= 0) return "";
    // Never keep half of a surrogate pair: the stored text must stay valid UTF-16.
    const cut = isHighSurrogate(delta.charCodeAt(room - 1)) ? room - 1 : room;
    return delta.slice(0, cut);
  }

  /**
   * The answer's tool calls reached their bound and one more does not fit (docs/PROTOCOL.md §14.1):
   * the turn is ended rather than keep calls the stored answer cannot show.
   */
  toolsFull(): void {
    this.#end(`The agent was stopped: its tool calls passed the gateway's limit of ${TOOLS_BYTES / 1024} KiB.`);
  }

  /**
   * Waits for the next macrotask when the answer has kept the event loop busy for a while, so that
   * other connections' frames, timers and this turn's own timeouts still run during a flood.
   */
  async breathe(): Promise<void> {
    await this.#share.breathe();
  }

  /** Stops the wall clock (the answer has ended). */
  dispose(): void {
    this.#options.clock.clearTimeout(this.#deadline);
  }

  #end(note: string): void {
    const controller = this.#turn.controller;
    if (controller.signal.aborted) return;
    this.note = note;
    this.#turn.reason = "limit";
    controller.abort("limit");
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** 600000 -> "10 min", 90000 -> "1.5 min", 2500 -> "2.5 s", 250 -> "250 ms". */
function formatDuration(ms: number): string {
  const round = (n: number) => Math.round(n * 10) / 10;
  if (ms >= 60_000) return `${round(ms / 60_000)} min`;
  if (ms >= 1_000) return `${round(ms / 1_000)} s`;
  return `${ms} ms`;
}
