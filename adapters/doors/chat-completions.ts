/**
 * `POST /v1/chat/completions` (docs/PROTOCOL.md §19): a stateless client's conversation mapped
 * onto one thread, its answer streamed as `chat.completion.chunk`s or given whole.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AnswerEnd, AnswerEvent } from "./answer-follower.js";
import { readChatRequest, type ChatRequest } from "./chat-input.js";
import type { DoorContext } from "./door-context.js";
import { followAnswer, sendConversation } from "./door-turn.js";
import { readJsonBody } from "./json-body.js";
import { DoorError, sendError, sendJson } from "./openai-errors.js";
import { EventStream } from "./sse.js";

/** `finish_reason` of an ended answer. */
function finishReason(end: AnswerEnd): string {
  return end.status === "error" ? "error" : "stop";
}

function usage(end: AnswerEnd): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const tokens = end.tokens ?? 0;
  return { prompt_tokens: 0, completion_tokens: tokens, total_tokens: tokens };
}

/** Streams the answer as chunks, ending with `[DONE]`. */
function streamAnswer(ctx: DoorContext, res: ServerResponse, request: ChatRequest): (event: AnswerEvent) => void {
  const stream = new EventStream(res, ctx.keepAliveMs);
  const created = Math.floor(Date.now() / 1000);
  let id = "chatcmpl-pending";
  const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
    stream.data({
      id,
      object: "chat.completion.chunk",
      created,
      model: request.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  return (event) => {
    switch (event.type) {
      case "start":
        id = `chatcmpl-${event.messageId}`;
        return chunk({ role: "assistant", content: "" }, null);
      case "text":
        return chunk({ content: event.delta }, null);
      case "reasoning":
        return chunk({ reasoning_content: event.delta }, null);
      case "end": {
        if (event.end.status === "error")
          stream.data({ error: { message: event.end.text || "the answer failed", type: "server_error" } });
        else chunk({}, finishReason(event.end));
        if (request.includeUsage)
          stream.data({
            id,
            object: "chat.completion.chunk",
            created,
            model: request.model,
            choices: [],
            usage: usage(event.end),
          });
        stream.data("[DONE]");
        return stream.end();
      }
      case "gone":
        stream.data({ error: { message: event.reason, type: "server_error" } });
        stream.data("[DONE]");
        return stream.end();
      default:
        // Tool calls run on the gateway's side: a client would try to run a `tool_calls` delta.
        return;
    }
  };
}

/** The whole answer as one `chat.completion`, once it ended. */
function wholeAnswer(res: ServerResponse, request: ChatRequest): (event: AnswerEvent) => void {
  return (event) => {
    if (event.type === "gone")
      return sendError(res, new DoorError(503, "server_error", event.reason, "unavailable", 1));
    if (event.type !== "end") return;
    const end = event.end;
    if (end.status === "error") {
      sendJson(res, 500, {
        error: { message: end.text || "the answer failed", type: "server_error", code: "answer_failed" },
      });
      return;
    }
    sendJson(res, 200, {
      id: `chatcmpl-${end.messageId}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: end.text,
            ...(end.reasoning ? { reasoning_content: end.reasoning } : {}),
          },
          finish_reason: finishReason(end),
        },
      ],
      usage: usage(end),
    });
  };
}

/** Handles one Chat Completions request. */
export async function chatCompletions(ctx: DoorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = readChatRequest(await readJsonBody(req, ctx.maxBodyBytes, ctx.bodyTimeoutMs));
  const last = { text: request.last, images: request.images };
  await followAnswer(
    ctx,
    req,
    res,
    "openai",
    async (turn) => {
      const sent = await sendConversation(turn, request.model, request.earlier, last);
      return { sent, emit: request.stream ? streamAnswer(ctx, res, request) : wholeAnswer(res, request) };
    },
    { media: last.images.length > 0 },
  );
}
