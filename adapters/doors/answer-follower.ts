/**
 * Follows one user message's answer through a door device's frames, live or joined mid-flight
 * (docs/PROTOCOL.md §12, §14), and turns it into what a door streams: text and reasoning as
 * appends, tool calls, asks, and the end.
 * @module
 */
import type { DoorFrame } from "./door-device.js";

/** How an answer ended, as stored (docs/PROTOCOL.md §4.3). */
export interface AnswerEnd {
  messageId: string;
  status: string;
  text: string;
  reasoning: string;
  tokens?: number;
  model?: string;
}

/** What a door is told of the answer it follows, in order. */
export type AnswerEvent =
  | { type: "start"; messageId: string; model?: string }
  | { type: "text"; delta: string }
  | { type: "reasoning"; delta: string }
  | { type: "tool-start"; index: number; name: string; preview: string; args: unknown }
  | { type: "tool-end"; index: number; name: string; output: unknown; ok: boolean }
  | { type: "ask"; frame: DoorFrame }
  | { type: "end"; end: AnswerEnd }
  | { type: "gone"; reason: string };

/** Frames held before the door knows which message it follows; more are dropped (the end carries the text). */
const MAX_HELD_FRAMES = 1_000;

/** One growing text: what the device holds (docs/PROTOCOL.md §12) and what the door has passed on. */
class GrowingText {
  held = "";
  passed = "";

  /** Applies an update and returns the new characters to pass on, if the text only grew. */
  apply(whole: unknown, offset: unknown, append: unknown): string {
    if (typeof whole === "string") this.held = whole;
    else if (typeof offset === "number" && typeof append === "string") this.held = this.held.slice(0, offset) + append;
    else return "";
    return this.advance();
  }

  /** The characters of `held` past what was passed on; none when the text was rewritten. */
  advance(): string {
    const passed = this.passed;
    if (this.held.length <= passed.length || !this.held.startsWith(passed)) return "";
    this.passed = this.held;
    return this.held.slice(passed.length);
  }
}

/** Follows the answer to one user message. Feed it every frame of the door's device. */
export class AnswerFollower {
  readonly #emit: (event: AnswerEvent) => void;
  readonly #held: DoorFrame[] = [];
  #userMessageId: string | undefined;
  #answerId: string | undefined;
  #lane: { chat_id: unknown; thread_id: unknown } | undefined;
  #ended = false;
  readonly #text = new GrowingText();
  readonly #reasoning = new GrowingText();

  constructor(emit: (event: AnswerEvent) => void) {
    this.#emit = emit;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Whether the answer was seen (started or ended) since the device said hello. */
  get seen(): boolean {
    return this.#answerId !== undefined || this.#ended;
  }

  /** A frame of the door's device. */
  handle(frame: DoorFrame): void {
    if (this.#ended) return;
    if (this.#userMessageId === undefined) {
      if (this.#held.length < MAX_HELD_FRAMES) this.#held.push(frame);
      return;
    }
    this.#route(frame);
  }

  /** From now on, follow the answer to this user message (frames held so far are read first). */
  follow(userMessageId: string, lane: { chat_id: unknown; thread_id: unknown }): void {
    this.#userMessageId = userMessageId;
    this.#lane = lane;
    const held = this.#held.splice(0);
    for (const frame of held) if (!this.#ended) this.#route(frame);
  }

  /** The answer as history holds it, ended before the door looked. */
  endWith(end: AnswerEnd): void {
    if (this.#ended) return;
    if (this.#answerId === undefined) this.#start(end.messageId, end.model);
    this.#finish(end);
  }

  /** The device went away before the answer ended. */
  fail(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#emit({ type: "gone", reason });
  }

  #route(frame: DoorFrame): void {
    const p = frame.payload;
    if (frame.type === "message.deleted" || frame.type === "channel.deleted") return this.#deleted(frame);
    if (this.#lane && (p.chat_id !== this.#lane.chat_id || p.thread_id !== this.#lane.thread_id)) {
      if (!frame.type.startsWith("picker.")) return;
    }
    const mine = this.#answerId !== undefined && p.message_id === this.#answerId;
    const answers = p.reply_to !== undefined && p.reply_to === this.#userMessageId;
    switch (frame.type) {
      case "message.start":
        if (answers && this.#answerId === undefined) this.#start(p.message_id as string, p.model as string | undefined);
        return;
      case "message.update":
        if (mine) this.#update(p);
        return;
      case "tool.start":
        if (mine)
          this.#emit({
            type: "tool-start",
            index: p.index as number,
            name: p.name as string,
            preview: p.preview as string,
            args: p.args,
          });
        return;
      case "tool.end":
        if (mine)
          this.#emit({
            type: "tool-end",
            index: p.index as number,
            name: p.name as string,
            output: p.output,
            ok: p.ok === true,
          });
        return;
      case "message.stop":
        if (mine || (answers && this.#answerId === undefined)) this.endWith(endOf(p, p.final_text));
        return;
      case "message":
        if (p.role === "assistant" && (mine || answers)) this.endWith(endOf(p, p.text));
        return;
      default:
        if (frame.type.startsWith("picker.") && this.#answerId !== undefined && p.message_id === this.#answerId)
          this.#emit({ type: "ask", frame });
        else if (
          frame.type === "picker.resolved" &&
          this.#lane &&
          p.chat_id === this.#lane.chat_id &&
          p.thread_id === this.#lane.thread_id
        )
          this.#emit({ type: "ask", frame });
    }
  }

  #start(messageId: string, model: string | undefined): void {
    this.#answerId = messageId;
    this.#emit({ type: "start", messageId, ...(model ? { model } : {}) });
  }

  #update(p: Record<string, unknown>): void {
    const reasoning = this.#reasoning.apply(p.reasoning, p.reasoning_offset, p.reasoning_append);
    if (reasoning) this.#emit({ type: "reasoning", delta: reasoning });
    const text = this.#text.apply(p.text, p.offset, p.append);
    if (text) this.#emit({ type: "text", delta: text });
  }

  #finish(end: AnswerEnd): void {
    this.#reasoning.held = end.reasoning;
    const reasoning = this.#reasoning.advance();
    if (reasoning) this.#emit({ type: "reasoning", delta: reasoning });
    this.#text.held = end.text;
    const text = this.#text.advance();
    if (text) this.#emit({ type: "text", delta: text });
    this.#ended = true;
    this.#emit({ type: "end", end });
  }

  #deleted(frame: DoorFrame): void {
    const p = frame.payload;
    const lane = this.#lane;
    const ids = Array.isArray(p.message_ids) ? (p.message_ids as unknown[]) : [];
    const gone =
      frame.type === "message.deleted"
        ? ids.includes(this.#userMessageId) || (this.#answerId !== undefined && ids.includes(this.#answerId))
        : lane !== undefined && (p.chat_id === lane.chat_id || p.chat_id === lane.thread_id);
    if (gone) this.fail("the conversation was deleted");
  }
}

/** The end of an answer from a `message.stop` or assistant `message` payload. */
function endOf(p: Record<string, unknown>, text: unknown): AnswerEnd {
  return {
    messageId: p.message_id as string,
    status: typeof p.status === "string" ? p.status : "complete",
    text: typeof text === "string" ? text : "",
    reasoning: typeof p.reasoning === "string" ? p.reasoning : "",
    ...(typeof p.tokens === "number" ? { tokens: p.tokens } : {}),
    ...(typeof p.model === "string" ? { model: p.model } : {}),
  };
}
