/**
 * A response and its typed stream events (docs/PROTOCOL.md §19). An event's `sequence_number` is
 * its place in a fixed layout, derived from the answer's content alone: a text delta is numbered
 * by the character it ends at, so a live stream, a join mid-flight and a replay from history
 * number every event the same, whatever pieces the text arrived in, and a resume after N starts
 * exactly where the client stopped, even inside a delta.
 * @module
 */
import type { AnswerEnd, AnswerEvent } from "./answer-follower.js";

/**
 * Characters each of the reasoning and the text may number (10^8, far past any answer's limit;
 * the layout's largest number stays under 2^31 for clients that hold it in 32 bits).
 */
export const RESPONSE_SPAN = 100_000_000;

/** The layout: where each event of a response stands. */
export const RESPONSE_SEQ = {
  created: 0,
  inProgress: 1,
  reasoningAdded: 2,
  summaryPartAdded: 3,
  /** A reasoning delta ending at reasoning character n is numbered `3 + n`. */
  reasoningBase: 3,
  summaryTextDone: RESPONSE_SPAN + 1,
  summaryPartDone: RESPONSE_SPAN + 2,
  reasoningDone: RESPONSE_SPAN + 3,
  messageAdded: 2 * RESPONSE_SPAN,
  contentPartAdded: 2 * RESPONSE_SPAN + 1,
  /** A text delta ending at text character n is numbered `2·10^8 + 1 + n`. */
  textBase: 2 * RESPONSE_SPAN + 1,
  textDone: 3 * RESPONSE_SPAN + 1,
  contentPartDone: 3 * RESPONSE_SPAN + 2,
  messageDone: 3 * RESPONSE_SPAN + 3,
  terminal: 3 * RESPONSE_SPAN + 4,
} as const;

/** What names a response besides its answer. */
export interface ResponseHead {
  /** The answer's `message_id`. */
  messageId: string;
  model: string;
  /** Epoch seconds. */
  createdAt: number;
  previousResponseId: string | null;
}

/** How far an answer is: while it runs, `end` is absent. */
export interface ResponseState {
  reasoning: string;
  text: string;
  end?: AnswerEnd;
}

type Json = Record<string, unknown>;

/** A response's status from its answer's stored status. */
function statusOf(end: AnswerEnd | undefined): "in_progress" | "completed" | "incomplete" | "failed" {
  if (!end || end.status === "streaming") return "in_progress";
  if (end.status === "error") return "failed";
  return end.status === "complete" ? "completed" : "incomplete";
}

function reasoningItem(head: ResponseHead, reasoning: string): Json {
  return {
    id: `rs_${head.messageId}`,
    type: "reasoning",
    summary: reasoning ? [{ type: "summary_text", text: reasoning }] : [],
  };
}

function textPart(text: string): Json {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

function messageItem(head: ResponseHead, text: string, status: string): Json {
  return { id: `msg_${head.messageId}`, type: "message", role: "assistant", status, content: [textPart(text)] };
}

/**
 * The `response` object. Its output is always a reasoning item (its summary empty when the answer
 * has no reasoning) and then the message, so an item's `output_index` never depends on when
 * reasoning arrived.
 */
export function responseObject(head: ResponseHead, state: ResponseState): Json {
  const status = statusOf(state.end);
  const tokens = state.end?.tokens ?? 0;
  const itemStatus = status === "in_progress" ? "in_progress" : status === "completed" ? "completed" : "incomplete";
  return {
    id: `resp_${head.messageId}`,
    object: "response",
    created_at: head.createdAt,
    status,
    error: status === "failed" ? { code: "server_error", message: state.end?.text || "the answer failed" } : null,
    incomplete_details: status === "incomplete" ? { reason: state.end?.status } : null,
    instructions: null,
    max_output_tokens: null,
    model: head.model,
    output:
      status === "in_progress" && !state.text && !state.reasoning
        ? []
        : [reasoningItem(head, state.reasoning), messageItem(head, state.text, itemStatus)],
    parallel_tool_calls: false,
    previous_response_id: head.previousResponseId,
    store: true,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: null,
    usage: status === "in_progress" ? null : usage(tokens),
    metadata: {},
  };
}

function usage(tokens: number): Json {
  return {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: tokens,
  };
}

/** The terminal event's type for an ended answer. */
function terminalType(end: AnswerEnd): string {
  const status = statusOf(end);
  return status === "completed"
    ? "response.completed"
    : status === "failed"
      ? "response.failed"
      : "response.incomplete";
}

/**
 * Turns an answer's events into the response's stream events, each with its place in the layout,
 * passing on only those numbered after `after` (a delta cut where the client stopped).
 */
export class ResponseEvents {
  readonly #head: ResponseHead;
  readonly #after: number;
  readonly #send: (event: Json) => void;
  #phase: "new" | "reasoning" | "message" | "ended" = "new";
  #reasoning = "";
  #text = "";
  #last = -1;

  constructor(head: ResponseHead, after: number, send: (event: Json) => void) {
    this.#head = head;
    this.#after = after;
    this.#send = send;
  }

  /** The highest number passed on so far (or `after`). */
  get last(): number {
    return Math.max(this.#last, this.#after);
  }

  /** One event of the answer; `start` must come first (the follower guarantees it). */
  handle(event: AnswerEvent): void {
    if (this.#phase === "ended") return;
    if (event.type === "start") return this.#start();
    if (event.type === "reasoning") return this.#reasoningDelta(event.delta);
    if (event.type === "text") return this.#textDelta(event.delta);
    if (event.type === "end") return this.#end(event.end);
  }

  #emit(seq: number, type: string, fields: Json): void {
    if (seq <= this.#after) return;
    this.#last = seq;
    this.#send({ type, sequence_number: seq, ...fields });
  }

  /** A delta numbered by where it ends, cut to what the client has not seen. */
  #delta(base: number, before: string, delta: string, type: string, fields: Json): void {
    const end = Math.min(before.length + delta.length, RESPONSE_SPAN - 1);
    const seen = this.#after - base;
    const from = Math.max(0, seen - before.length);
    if (from < delta.length) this.#emit(base + end, type, { ...fields, delta: delta.slice(from) });
  }

  #start(): void {
    if (this.#phase !== "new") return;
    this.#phase = "reasoning";
    const response = responseObject(this.#head, { reasoning: "", text: "" });
    this.#emit(RESPONSE_SEQ.created, "response.created", { response });
    this.#emit(RESPONSE_SEQ.inProgress, "response.in_progress", { response });
    const item = { ...reasoningItem(this.#head, ""), status: "in_progress" };
    this.#emit(RESPONSE_SEQ.reasoningAdded, "response.output_item.added", { output_index: 0, item });
  }

  #summary(): Json {
    return { item_id: `rs_${this.#head.messageId}`, output_index: 0, summary_index: 0 };
  }

  #reasoningDelta(delta: string): void {
    // Reasoning that comes after the text began is in the final response, not in the events.
    if (this.#phase !== "reasoning") return;
    const before = this.#reasoning;
    this.#reasoning += delta;
    if (before === "")
      this.#emit(RESPONSE_SEQ.summaryPartAdded, "response.reasoning_summary_part.added", {
        ...this.#summary(),
        part: { type: "summary_text", text: "" },
      });
    this.#delta(RESPONSE_SEQ.reasoningBase, before, delta, "response.reasoning_summary_text.delta", this.#summary());
  }

  #openMessage(): void {
    if (this.#phase !== "reasoning") return;
    this.#phase = "message";
    const reasoning = this.#reasoning;
    if (reasoning) {
      this.#emit(RESPONSE_SEQ.summaryTextDone, "response.reasoning_summary_text.done", {
        ...this.#summary(),
        text: reasoning,
      });
      this.#emit(RESPONSE_SEQ.summaryPartDone, "response.reasoning_summary_part.done", {
        ...this.#summary(),
        part: { type: "summary_text", text: reasoning },
      });
    }
    this.#emit(RESPONSE_SEQ.reasoningDone, "response.output_item.done", {
      output_index: 0,
      item: reasoningItem(this.#head, reasoning),
    });
    this.#emit(RESPONSE_SEQ.messageAdded, "response.output_item.added", {
      output_index: 1,
      item: { ...messageItem(this.#head, "", "in_progress"), content: [] },
    });
    this.#emit(RESPONSE_SEQ.contentPartAdded, "response.content_part.added", {
      ...this.#part(),
      part: textPart(""),
    });
  }

  #part(): Json {
    return { item_id: `msg_${this.#head.messageId}`, output_index: 1, content_index: 0 };
  }

  #textDelta(delta: string): void {
    this.#openMessage();
    const before = this.#text;
    this.#text += delta;
    this.#delta(RESPONSE_SEQ.textBase, before, delta, "response.output_text.delta", { ...this.#part(), logprobs: [] });
  }

  #end(end: AnswerEnd): void {
    this.#openMessage();
    this.#phase = "ended";
    // The stored text, as a replay has it (a rewritten text passed on no more deltas).
    const text = end.text;
    const response = responseObject(this.#head, { reasoning: end.reasoning, text, end });
    const message = (response.output as Json[])[1];
    this.#emit(RESPONSE_SEQ.textDone, "response.output_text.done", { ...this.#part(), text, logprobs: [] });
    this.#emit(RESPONSE_SEQ.contentPartDone, "response.content_part.done", { ...this.#part(), part: textPart(text) });
    this.#emit(RESPONSE_SEQ.messageDone, "response.output_item.done", { output_index: 1, item: message });
    this.#emit(RESPONSE_SEQ.terminal, terminalType(end), { response });
  }
}

/** An answer as stored, as the events a follower gives: a replay numbers them as the live stream did. */
export function replayAnswer(handle: (event: AnswerEvent) => void, state: ResponseState): void {
  handle({ type: "start", messageId: state.end?.messageId ?? "" });
  if (state.reasoning) handle({ type: "reasoning", delta: state.reasoning });
  if (state.text) handle({ type: "text", delta: state.text });
  if (state.end) handle({ type: "end", end: state.end });
}
