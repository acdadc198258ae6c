// One `session/prompt`: the message is sent once (a retry after a drop reuses its client_msg_id)
// and its answer's frames become `session/update`s until its final frame gives the stop reason
// (docs/PROTOCOL.md §20). Frames of the lane that are not the answer's are other devices' doing:
// their messages are shown, their asks offered to the editor.
import { randomUUID } from "node:crypto";
import { RequestError, type AgentContext, type SessionUpdate, type StopReason } from "@agentclientprotocol/sdk";
import type {
  GatewayClient,
  MessagePayload,
  MessageStopPayload,
  MessageUpdatePayload,
  ToolEndPayload,
  ToolStartPayload,
} from "chat-gateway/client";
import type { ServerFrame } from "chat-gateway/protocol";
import { inLane, type Lane } from "./lanes.js";
import { hasOptions, permissionRequest, questionText, type Ask } from "./permissions.js";
import type { PromptMessage } from "./prompt-input.js";
import { chunk, toolCallEnded, toolCallStarted, toolCallId } from "./updates.js";

/** Where the bridge says what went wrong, one line each (stderr: stdout carries JSON-RPC only). */
export type AcpLog = (line: string) => void;

/** A final text that ends with one of the gateway's limit lines (docs/PROTOCOL.md §4.2). */
const LIMIT_LINE = /(gateway's limit of [^\n]*)$/;

/** What a tool call is shown with: a live `tool.start`, or a call kept on the final frame. */
type ToolStart = Pick<ToolStartPayload, "message_id" | "index" | "name" | "preview"> & { args: unknown };

/** The stop reason of an answer's final frame, or the JSON-RPC error of a failed one. */
function stopReasonOf(status: MessageStopPayload["status"] | undefined, finalText: string): StopReason {
  if (status === "stopped") return "cancelled";
  if (status === "error" && LIMIT_LINE.test(finalText)) return "max_tokens";
  if (status === "error" || status === "interrupted") {
    const last = finalText.trim().split("\n").pop() || `the answer ended ${status}`;
    throw RequestError.internalError({ status }, last);
  }
  return "end_turn";
}

/** A prompt in flight; {@link PromptRun.run} resolves with its stop reason. */
export class PromptRun {
  readonly #clientMsgId = `acp_${randomUUID()}`;
  readonly #waiting: ServerFrame[] = [];
  readonly #tools = new Set<string>();
  readonly #asked = new Map<string, AbortController>();
  #userMessageId: string | undefined;
  #answerId: string | undefined;
  #sentText = "";
  #sentReasoning = "";
  #chain: Promise<void> = Promise.resolve();
  #cancelled = false;
  #ended = false;
  #settle!: { resolve: (reason: StopReason) => void; reject: (error: unknown) => void };
  readonly #outcome = new Promise<StopReason>((resolve, reject) => (this.#settle = { resolve, reject }));

  constructor(
    private readonly client: GatewayClient,
    private readonly editor: AgentContext,
    private readonly sessionId: string,
    private readonly lane: Lane,
    private readonly log: AcpLog,
  ) {}

  /** Sends the message and follows its answer to the end. */
  async run(message: PromptMessage): Promise<StopReason> {
    const listener = (frame: ServerFrame) => this.#onFrame(frame);
    this.client.on("frame", listener);
    try {
      const echo = await this.client.sendMessage(
        { ...this.lane, text: message.text, media_refs: message.media_refs, client_msg_id: this.#clientMsgId },
        { timeoutMs: 120_000 },
      );
      this.#knowUserMessage(echo.message_id);
      if (this.#cancelled) void this.cancel();
      const reason = await this.#outcome;
      await this.#chain;
      return reason;
    } finally {
      this.client.off("frame", listener);
      for (const controller of this.#asked.values()) controller.abort();
    }
  }

  /**
   * `session/cancel`: a running answer is stopped (`turn.stop`) and ends `cancelled`; a message
   * still waiting in the lane's queue is deleted, so it never runs.
   */
  async cancel(): Promise<void> {
    this.#cancelled = true;
    for (const controller of this.#asked.values()) controller.abort();
    if (this.#userMessageId === undefined || this.#ended) return;
    try {
      if (this.#answerId !== undefined) {
        await this.client.stop(this.lane);
        return;
      }
      await this.client.request("message.delete", { ...this.lane, message_ids: [this.#userMessageId] });
      this.#finish("cancelled");
    } catch (error) {
      this.log(`cancel: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  #knowUserMessage(messageId: string): void {
    if (this.#userMessageId !== undefined) return;
    this.#userMessageId = messageId;
    for (const frame of this.#waiting.splice(0)) this.#onFrame(frame);
  }

  #notify(update: SessionUpdate): void {
    const params = { sessionId: this.sessionId, update };
    this.#chain = this.#chain
      .then(() => this.editor.notify("session/update", params))
      .catch((error) => this.log(`session/update: ${error instanceof Error ? error.message : String(error)}`));
  }

  #finish(reason: StopReason | Error): void {
    if (this.#ended) return;
    this.#ended = true;
    if (reason instanceof Error) this.#settle.reject(reason);
    else this.#settle.resolve(reason);
  }

  #onFrame(frame: ServerFrame): void {
    if (this.#ended || !("chat_id" in frame.payload) || !inLane(frame.payload, this.lane)) return;
    if (frame.type === "message" && frame.payload.role === "user") return this.#onUserMessage(frame.payload);
    if (frame.type === "picker.approval") return this.#onAsk({ kind: "approval", ...frame.payload });
    if (frame.type === "picker.confirm") return this.#onAsk({ kind: "confirm", ...frame.payload });
    if (frame.type === "picker.resolved") return this.#asked.get(frame.payload.picker_id)?.abort();
    const asked = this.#userMessageId;
    if (asked === undefined) return void this.#waiting.push(frame);
    if (frame.type === "message.deleted" && frame.payload.message_ids.includes(asked)) return this.#finish("cancelled");
    if (frame.type === "message.start" && frame.payload.reply_to === asked) this.#answerId = frame.payload.message_id;
    if (frame.type === "message" && frame.payload.reply_to === asked) {
      this.#answerId = frame.payload.message_id;
      const { message_id, text, reasoning, status, tools } = frame.payload;
      return this.#onFinal({ message_id, final_text: text, reasoning, status: status ?? "complete", tools });
    }
    if (!("message_id" in frame.payload) || frame.payload.message_id !== this.#answerId) return;
    this.#onAnswerFrame(frame);
  }

  #onAnswerFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case "message.update": {
        const update = frame.payload as MessageUpdatePayload;
        return this.#streamed(update.text ?? this.#sentText, update.reasoning ?? this.#sentReasoning);
      }
      case "commentary":
        return this.#notify(chunk("agent_thought_chunk", `${frame.payload.text}\n`, frame.payload.message_id));
      case "tool.start":
        return this.#toolStarted(frame.payload);
      case "tool.end":
        // A call whose start was missed (a redial mid-call) is shown from its end.
        return this.#toolEnded({ preview: frame.payload.name, args: {}, ...frame.payload });
      case "message.stop":
        return this.#onFinal(frame.payload);
    }
  }

  /** The whole text and reasoning so far: what the editor has not seen yet is sent as chunks. */
  #streamed(text: string, reasoning: string): void {
    if (reasoning.length > this.#sentReasoning.length && reasoning.startsWith(this.#sentReasoning)) {
      this.#notify(chunk("agent_thought_chunk", reasoning.slice(this.#sentReasoning.length), this.#answerId));
    }
    this.#sentReasoning = reasoning;
    if (text.length > this.#sentText.length && text.startsWith(this.#sentText)) {
      this.#notify(chunk("agent_message_chunk", text.slice(this.#sentText.length), this.#answerId));
    }
    this.#sentText = text;
  }

  /** Each call is shown once, also when a redial brings its frames or its final frame again. */
  #toolStarted(start: ToolStart): void {
    const id = toolCallId(start.message_id, start.index);
    if (this.#tools.has(id)) return;
    this.#tools.add(id);
    this.#notify(toolCallStarted(start));
  }

  #toolEnded(end: ToolStart & Pick<ToolEndPayload, "output" | "ok">): void {
    const id = `${toolCallId(end.message_id, end.index)}:end`;
    if (this.#tools.has(id)) return;
    this.#toolStarted(end);
    this.#tools.add(id);
    this.#notify(toolCallEnded(end));
  }

  /** The answer's final frame: tools a drop hid, the rest of the text, then the stop reason. */
  #onFinal(final: Pick<MessageStopPayload, "message_id" | "final_text" | "reasoning" | "status" | "tools">): void {
    for (const tool of final.tools ?? []) this.#toolEnded({ message_id: final.message_id, ...tool });
    this.#streamed(final.final_text, final.reasoning ?? "");
    try {
      this.#finish(stopReasonOf(final.status, final.final_text));
    } catch (error) {
      this.#finish(error as Error);
    }
  }

  #onUserMessage(message: MessagePayload): void {
    if (message.client_msg_id === this.#clientMsgId) return this.#knowUserMessage(message.message_id);
    if (this.#userMessageId === undefined || message.message_id === this.#userMessageId) return;
    if (message.text) this.#notify(chunk("user_message_chunk", message.text, message.message_id));
  }

  /** An ask of the lane: offered to the editor once, answered with `picker.select` (first answer wins). */
  #onAsk(ask: Ask): void {
    if (this.#asked.has(ask.picker_id) || this.#cancelled) return;
    const controller = new AbortController();
    this.#asked.set(ask.picker_id, controller);
    if (!hasOptions(ask)) return this.#notify(chunk("agent_message_chunk", questionText(ask)));
    const request = permissionRequest(this.sessionId, ask);
    void this.#chain
      .then(() => this.editor.request("session/request_permission", request, { cancellationSignal: controller.signal }))
      .then(async (response) => {
        if (response.outcome.outcome !== "selected" || controller.signal.aborted) return;
        await this.client.select(ask.picker_id, { option_id: response.outcome.optionId });
      })
      .catch((error) => this.log(`permission: ${error instanceof Error ? error.message : String(error)}`));
  }
}
