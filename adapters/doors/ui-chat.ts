/**
 * `POST /api/chat` and `GET /api/chat/{id}/stream` (docs/PROTOCOL.md §19): the AI SDK's UI message
 * stream v1, written with the `ai` package's own stream helpers (an optional peer, loaded when a
 * request comes).
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AnswerEvent } from "./answer-follower.js";
import type { DoorContext } from "./door-context.js";
import { followAnswer, sendInto, type DoorTurn, type SentMessage } from "./door-turn.js";
import { readJsonBody } from "./json-body.js";
import { DoorError } from "./openai-errors.js";
import { readUiChatRequest, type UiChatRequest } from "./ui-chat-input.js";
import { BINDING_CHANNEL, placeChat, uiMessageKey } from "./ui-chat-lane.js";
import { uiChunks } from "./ui-chunks.js";

type AiStreams = Pick<typeof import("ai"), "createUIMessageStream" | "pipeUIMessageStreamToResponse">;

/** The `ai` package, or a 501 that says to install it. */
async function aiStreams(): Promise<AiStreams> {
  try {
    return await import("ai");
  } catch {
    throw new DoorError(
      501,
      "server_error",
      "the /api/chat door needs the package `ai`: npm install ai",
      "missing_peer",
    );
  }
}

/** Sends the request's last message where its chat is (a new chat made and bound on first use). */
async function sendChat(turn: DoorTurn, request: UiChatRequest): Promise<SentMessage> {
  const place = await placeChat(turn, request.id);
  const key = request.regenerate ? undefined : uiMessageKey(request.id, request.lastId);
  const last = { text: request.last, images: request.images };
  if (place.kind === "lane") return sendInto(turn, place.lane, last, key);
  if (place.kind === "bound") {
    // The chat's first message again (a retry before anything else was said): follow its answer.
    const retry = request.earlier.length === 0 && !request.regenerate && place.first.text === request.last;
    if (retry) return { messageId: place.first.message_id, lane: place.lane };
    return sendInto(turn, place.lane, last, key);
  }
  const flat = { chat_id: BINDING_CHANNEL, thread_id: null };
  return sendInto(turn, flat, last, place.bindingKey, { newThread: true, imports: request.earlier });
}

/**
 * Starts a UI message stream on the response and resolves with the function that feeds it the
 * answer's events; the stream ends when the answer does.
 */
async function openUiStream(ctx: DoorContext, res: ServerResponse): Promise<(event: AnswerEvent) => void> {
  const ai = await aiStreams();
  let feed: ((event: AnswerEvent) => void) | undefined;
  const fed = new Promise<(event: AnswerEvent) => void>((resolve) => {
    const stream = ai.createUIMessageStream({
      execute: async ({ writer }) => {
        const chunks = uiChunks((chunk) => writer.write(chunk as Parameters<typeof writer.write>[0]));
        feed = chunks.emit;
        resolve(chunks.emit);
        await chunks.done;
      },
      onError: (error) => (error instanceof Error ? error.message : "the answer failed"),
    });
    const init = { response: res, stream, keepAliveMs: ctx.keepAliveMs };
    void ai
      .pipeUIMessageStreamToResponse(init as Parameters<AiStreams["pipeUIMessageStreamToResponse"]>[0])
      .catch(() => undefined);
  });
  return feed ?? (await fed);
}

/** `POST /api/chat`. */
export async function uiChat(ctx: DoorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = readUiChatRequest(await readJsonBody(req, ctx.maxBodyBytes, ctx.bodyTimeoutMs));
  await aiStreams();
  await followAnswer(
    ctx,
    req,
    res,
    "ai-sdk",
    async (turn) => ({ sent: await sendChat(turn, request), emit: await openUiStream(ctx, res) }),
    { media: request.images.length > 0 },
  );
}

/** `GET /api/chat/{id}/stream`: the lane's running answer from its start, or 204. */
export async function resumeUiChat(
  ctx: DoorContext,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
): Promise<void> {
  await aiStreams();
  await followAnswer(ctx, req, res, "ai-sdk", async (turn) => {
    const place = await placeChat(turn, id);
    const running = place.kind === "new" ? undefined : await runningAnswer(turn, place.lane);
    if (!running) {
      res.writeHead(204).end();
      return undefined;
    }
    return { sent: running, emit: await openUiStream(ctx, res) };
  });
}

/** The user message whose answer streams in the lane now, from the lane's newest messages. */
async function runningAnswer(
  turn: DoorTurn,
  lane: { chat_id: string; thread_id: string | null },
): Promise<SentMessage | undefined> {
  const page = await turn.session.device.request("history", { ...lane, limit: 20 });
  const items = (page.payload.messages ?? []) as Array<{ role: string; status?: string; reply_to?: string }>;
  const streaming = items.find((m) => m.role === "assistant" && m.status === "streaming" && m.reply_to);
  return streaming ? { messageId: streaming.reply_to as string, lane } : undefined;
}
