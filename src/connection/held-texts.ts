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

/**
 * The bytes of an append `message.update` besides its ids and characters: the keys, quotes and
 * braces of `{"type":"message.update","payload":{"message_id":…,"chat_id":…,"thread_id":…,
 * "offset":…,"append":…}}` with a four-digit offset.
 */
const APPEND_FRAME_FIXED_BYTES = 101;

/** The text and reasoning of a full-text update, or of what a device holds. */
interface Texts {
  text: string;
  reasoning: string;
}

/** What a device holds right after `message.start`: nothing yet. */
const STARTED: OutgoingFrame = { type: "message.update", payload: { text: "", reasoning: "" } };

/**
 * Delta frames already built from one full-text update, by the update the device's copy came
 * from: devices in step (the usual case) share one frame, so the texts are compared and the frame
 * serialised once for all of them rather than once per device. Both maps are weak, so a frame
 * is kept only while the turn or a device still refers to it.
 */
const derived = new WeakMap<OutgoingFrame, WeakMap<OutgoingFrame, OutgoingFrame>>();

/** What one device holds of the messages being streamed to it. */
export class HeldTexts {
  /** By message id: the full-text update the device's copy equals (or {@link STARTED}). */
  readonly #held = new Map<string, OutgoingFrame>();

  /** `message.start` went out: the device holds an empty answer. */
  started(messageId: string): void {
    this.#remember(messageId, STARTED);
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
    const messageId = update.payload.message_id as string;
    const origin = this.#held.get(messageId);
    this.#remember(messageId, update);
    if (origin === undefined || update.whole) return update;
    let byOrigin = derived.get(update);
    if (byOrigin === undefined) {
      byOrigin = new WeakMap();
      derived.set(update, byOrigin);
    }
    let frame = byOrigin.get(origin);
    if (frame === undefined) {
      frame = deltaFrame(update, textsOf(origin));
      byOrigin.set(origin, frame);
    }
    return frame;
  }

  /**
   * True when `update` would reach this device as appends shorter than the frame around them
   * (docs/PROTOCOL.md §12), so waiting for more text halves what it costs. False for the first
   * update of a message, one the device holds nothing of, and a rewritten text.
   */
  thin(update: OutgoingFrame): boolean {
    const origin = this.#held.get(update.payload.message_id as string);
    if (origin === undefined || origin === STARTED || update.whole) return false;
    const now = textsOf(update);
    const was = textsOf(origin);
    const envelope = envelopeBytes(update.payload);
    // An answer's opening streams at the interval's pace: the person sees it start to move.
    if (was.text.length + was.reasoning.length < envelope) return false;
    const growth = now.text.length - was.text.length + now.reasoning.length - was.reasoning.length;
    return growth >= 0 && growth < envelope;
  }

  #remember(messageId: string, from: OutgoingFrame): void {
    // Re-inserted so that the map's order is least recently updated first.
    this.#held.delete(messageId);
    this.#held.set(messageId, from);
    if (this.#held.size > MAX_FOLLOWED) this.#held.delete(this.#held.keys().next().value!);
  }
}

/** About what an append update for this message costs besides its characters. */
function envelopeBytes(payload: OutgoingFrame["payload"]): number {
  const idBytes = (value: unknown) => (typeof value === "string" ? value.length + 2 : 4);
  return APPEND_FRAME_FIXED_BYTES + idBytes(payload.message_id) + idBytes(payload.chat_id) + idBytes(payload.thread_id);
}

function textsOf(frame: OutgoingFrame): Texts {
  const p = frame.payload;
  return {
    text: typeof p.text === "string" ? p.text : "",
    reasoning: typeof p.reasoning === "string" ? p.reasoning : "",
  };
}

/**
 * `update` for a device that holds `held`: every field of the full update except the texts, then
 * for each text either `offset`/`append` from what is held or the whole text that replaces it.
 * Reasoning that did not change is left out; when neither text extends what is held, the update
 * goes as it is.
 */
function deltaFrame(update: OutgoingFrame, held: Texts): OutgoingFrame {
  const now = textsOf(update);
  const textGrows = now.text.startsWith(held.text);
  const reasoningGrows = now.reasoning.startsWith(held.reasoning);
  if (!textGrows && !reasoningGrows) return update;
  const { text: _text, reasoning: _reasoning, ...payload } = update.payload;
  if (textGrows) Object.assign(payload, { offset: held.text.length, append: now.text.slice(held.text.length) });
  else payload.text = now.text;
  if (!reasoningGrows) payload.reasoning = now.reasoning;
  else if (now.reasoning.length > held.reasoning.length) {
    Object.assign(payload, {
      reasoning_offset: held.reasoning.length,
      reasoning_append: now.reasoning.slice(held.reasoning.length),
    });
  }
  return { type: update.type, payload };
}
