/**
 * Delta updates for one device (docs/PROTOCOL.md §12): what the device holds of each streaming
 * message, and the `message.update` that brings it from there to the text the turn published.
 * The turn always publishes the whole text; the difference is taken here, when the frame is
 * written, so a coalesced or held-back update still starts exactly where the device stands.
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";

/**
 * Streaming messages followed per device. Past it the least recently updated is forgotten and its
 * next update carries the whole text again, so a stop that never came (a turn lost with its
 * process) cannot grow the map.
 */
const MAX_FOLLOWED = 64;

/** The text and reasoning a device holds of one message. */
interface Held {
  text: string;
  reasoning: string;
}

/**
 * Delta frames already built from one full-text update, by the lengths they start from: devices
 * in step (the usual case) share one frame, so it is serialised once for all of them.
 */
const derived = new WeakMap<OutgoingFrame, Map<string, OutgoingFrame>>();

/** What one device holds of the messages being streamed to it. */
export class HeldTexts {
  readonly #held = new Map<string, Held>();

  /** `message.start` went out: the device holds an empty answer. */
  started(messageId: string): void {
    this.#remember(messageId, { text: "", reasoning: "" });
  }

  /** `message.stop`, `message` or `message.deleted` went out: nothing more streams for it. */
  ended(messageId: string): void {
    this.#held.delete(messageId);
  }

  /**
   * The frame to write instead of `update` (a full-text `message.update` as the turn publishes
   * it): appends from what the device holds, or `update` itself when the device holds nothing of
   * the message yet (it joined mid-stream) or the text was rewritten rather than extended.
   */
  shape(update: OutgoingFrame): OutgoingFrame {
    const p = update.payload;
    const messageId = p.message_id as string;
    const now: Held = { text: typeof p.text === "string" ? p.text : "", reasoning: typeof p.reasoning === "string" ? p.reasoning : "" };
    const held = this.#held.get(messageId);
    this.#remember(messageId, now);
    if (held === undefined) return update;
    const textGrows = now.text.startsWith(held.text);
    const reasoningGrows = now.reasoning.startsWith(held.reasoning);
    if (!textGrows && !reasoningGrows) return update;
    const key = `${textGrows ? held.text.length : "-"}:${reasoningGrows ? held.reasoning.length : "-"}`;
    let byStart = derived.get(update);
    if (byStart === undefined) derived.set(update, (byStart = new Map()));
    let frame = byStart.get(key);
    if (frame === undefined) {
      frame = { type: update.type, payload: deltaPayload(p, held, now, textGrows, reasoningGrows) };
      byStart.set(key, frame);
    }
    return frame;
  }

  #remember(messageId: string, held: Held): void {
    // Re-inserted so that the map's order is least recently updated first.
    this.#held.delete(messageId);
    this.#held.set(messageId, held);
    if (this.#held.size > MAX_FOLLOWED) this.#held.delete(this.#held.keys().next().value!);
  }
}

/**
 * The payload of a delta `message.update`: every field of the full one except the texts, then
 * for each text either `offset`/`append` from what is held or the whole text that replaces it.
 * Reasoning that did not change is left out.
 */
function deltaPayload(full: Record<string, unknown>, held: Held, now: Held, textGrows: boolean, reasoningGrows: boolean): Record<string, unknown> {
  const { text: _text, reasoning: _reasoning, ...payload } = full;
  if (textGrows) Object.assign(payload, { offset: held.text.length, append: now.text.slice(held.text.length) });
  else payload.text = now.text;
  if (!reasoningGrows) payload.reasoning = now.reasoning;
  else if (now.reasoning.length > held.reasoning.length) {
    Object.assign(payload, { reasoning_offset: held.reasoning.length, reasoning_append: now.reasoning.slice(held.reasoning.length) });
  }
  return payload;
}
