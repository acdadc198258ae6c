/**
 * Delta updates on the client side (docs/PROTOCOL.md §12): the text and reasoning this device
 * holds of each streaming answer, grown by the appends of `message.update`, so that every
 * `message.update` event still carries the whole text.
 * @module
 */
import type { MessageUpdatePayload } from "./frames.js";
import type { ServerFrame, ServerPayloads } from "chat-gateway/protocol";

/** Answers followed at once, as on the gateway; past it the least recently updated is forgotten. */
const MAX_FOLLOWED = 64;

/** What the device holds of one answer; `gap` once an append did not fit, until a whole text comes. */
interface Held {
  text: string;
  reasoning: string;
  gap: boolean;
}

/**
 * What {@link StreamTexts.apply} made of an update: the payload with the whole `text` (and
 * `reasoning`) filled in, or undefined when an append did not fit what is held (dropped).
 */
export type Applied = MessageUpdatePayload | undefined;

/** The texts of the answers being streamed to this device over the current connection. */
export class StreamTexts {
  readonly #held = new Map<string, Held>();

  /** A new connection: the gateway starts every answer in flight again with its whole text. */
  reset(): void {
    this.#held.clear();
  }

  /** Follow the frames that start and end answers. */
  observe(frame: ServerFrame): void {
    const p = frame.payload as { message_id?: string; message_ids?: string[] };
    if (frame.type === "message.start" && p.message_id)
      this.#remember(p.message_id, { text: "", reasoning: "", gap: false });
    else if ((frame.type === "message.stop" || frame.type === "message") && p.message_id)
      this.#held.delete(p.message_id);
    else if (frame.type === "message.deleted") for (const id of p.message_ids ?? []) this.#held.delete(id);
  }

  /**
   * Apply one `message.update`: a whole `text`/`reasoning` replaces the copy, an append grows it
   * when its offset is the length held. An append that does not fit (or comes for an answer this
   * connection never started) leaves the copy as it was, and every later append of that answer is
   * dropped too, until a whole text or the `message.stop` (whose `final_text` is the answer)
   * puts it right.
   */
  apply(payload: ServerPayloads["message.update"]): Applied {
    const id = payload.message_id;
    const held = this.#held.get(id) ?? { text: "", reasoning: "", gap: true };
    const next = { ...held };
    if (typeof payload.text === "string") Object.assign(next, { text: payload.text, gap: false });
    else if (typeof payload.offset === "number") {
      if (next.gap || payload.offset !== next.text.length) return this.#gap(id, held);
      next.text += payload.append ?? "";
    }
    if (typeof payload.reasoning === "string") next.reasoning = payload.reasoning;
    else if (typeof payload.reasoning_offset === "number") {
      if (next.gap || payload.reasoning_offset !== next.reasoning.length) return this.#gap(id, held);
      next.reasoning += payload.reasoning_append ?? "";
    }
    this.#remember(id, next);
    const filled: MessageUpdatePayload = { ...payload, text: next.text };
    if (next.reasoning) filled.reasoning = next.reasoning;
    return filled;
  }

  #gap(id: string, held: Held): undefined {
    this.#remember(id, { ...held, gap: true });
    return undefined;
  }

  #remember(id: string, held: Held): void {
    this.#held.delete(id);
    this.#held.set(id, held);
    if (this.#held.size > MAX_FOLLOWED) this.#held.delete(this.#held.keys().next().value!);
  }
}
