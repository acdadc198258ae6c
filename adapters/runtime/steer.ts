/**
 * Steering for both runtime bindings (docs/PROTOCOL.md §14.4, `when_busy: "steer"`): a message the
 * gateway hands to a running turn waits here until the turn's next model call, which gets it as a
 * user message. A turn that was about to end makes one more call for a message that came during
 * its last one, so every message a turn took is answered; once a turn has closed its inbox, it
 * takes none, and the gateway gives the message a turn of its own.
 * @module
 */
import type { SteerInput, TurnInput } from "chat-gateway";
import { withAttachmentNotes } from "./text.js";

/** The steering inbox of one running turn. */
export interface TurnSteers {
  /** The texts handed in since the last call, oldest first; they are the caller's from now on. */
  drain(): string[];
  /**
   * End the turn's inbox when nothing waits in it: true, and later steers are refused. False when
   * a message waits: the turn must make one more model call for it.
   */
  close(): boolean;
}

/** The running turns of one runtime that take steering, by the user message each answers. */
export class SteerInboxes {
  readonly #open = new Map<string, string[]>();

  /** Open the inbox of a turn for as long as it runs (close it, or it stays open for nothing). */
  open(input: TurnInput): TurnSteers {
    const key = keyOf(input.owner, input.message.message_id);
    const texts: string[] = [];
    this.#open.set(key, texts);
    // An aborted turn makes no more calls: it takes nothing from now on.
    const onAbort = () => this.#open.get(key) === texts && this.#open.delete(key);
    input.signal.addEventListener("abort", onAbort, { once: true });
    return {
      drain: () => texts.splice(0),
      close: () => {
        if (texts.length > 0) return false;
        onAbort();
        input.signal.removeEventListener("abort", onAbort);
        return true;
      },
    };
  }

  /** `AgentRuntime.steer`: true when the lane's running turn took the message for its next call. */
  take(input: SteerInput): boolean {
    const texts = this.#open.get(keyOf(input.owner, input.turn_message_id));
    if (!texts) return false;
    texts.push(withAttachmentNotes(input.message.text, input.message.media));
    return true;
  }
}

function keyOf(owner: string, messageId: string): string {
  return `${owner}\u0000${messageId}`;
}
