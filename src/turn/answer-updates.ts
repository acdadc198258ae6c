/**
 * The live `message.update` frames of a streamed answer: at most one per update interval, each
 * carrying the whole text so far (docs/PROTOCOL.md §4), so coalescing loses nothing.
 * @module
 */
import type { TurnServices } from "./turn-services.js";
import type { Owner } from "../protocol/ids.js";
import type { StoredMessage } from "../contracts/records.js";
import type { ServerPayloads } from "../protocol/server-frames.js";
import type { ClockTimer } from "../support/clock.js";

/** `model` and `tokens` of a live frame, each only when known. */
export function usageFields(message: StoredMessage): { model?: string; tokens?: number } {
  const fields: { model?: string; tokens?: number } = {};
  if (message.model !== undefined) fields.model = message.model;
  if (message.tokens !== undefined) fields.tokens = message.tokens;
  return fields;
}

/** Sends the answer's updates, throttled to the gateway's `updateIntervalMs`. */
export class AnswerUpdates {
  readonly #services: TurnServices;
  readonly #owner: Owner;
  readonly #message: StoredMessage;
  readonly #signal: AbortSignal;
  #dirty = false;
  #lastUpdate = Number.NEGATIVE_INFINITY;
  #timer: ClockTimer | undefined;

  constructor(services: TurnServices, owner: Owner, message: StoredMessage, signal: AbortSignal) {
    this.#services = services;
    this.#owner = owner;
    this.#message = message;
    this.#signal = signal;
  }

  /** The message changed: send an update now or when the interval allows. */
  schedule(): void {
    this.#dirty = true;
    if (!this.#services.options.streaming || this.#timer) return;
    const { clock, updateIntervalMs } = this.#services.options;
    const wait = Math.max(0, this.#lastUpdate + updateIntervalMs - clock.now());
    this.#timer = clock.setTimeout(() => this.#send(), wait);
  }

  /** No more updates (the final frame follows). */
  dispose(): void {
    if (this.#timer) this.#services.options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #send(): void {
    this.#timer = undefined;
    if (!this.#dirty || this.#signal.aborted) return;
    this.#dirty = false;
    this.#lastUpdate = this.#services.options.clock.now();
    const message = this.#message;
    const payload: ServerPayloads["message.update"] = {
      message_id: message.message_id,
      text: message.text,
      ...usageFields(message),
      chat_id: message.chat_id,
      thread_id: message.thread_id,
    };
    if (message.reasoning) payload.reasoning = message.reasoning;
    this.#services.live(this.#owner, { type: "message.update", payload });
  }
}
