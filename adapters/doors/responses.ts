/**
 * `POST /v1/responses` and `GET /v1/responses/{id}` (docs/PROTOCOL.md §19): a response is an
 * assistant answer, `resp_<message_id>`, given whole or as typed events; any process answers a
 * stored one from history, and a stream resumes after the event a client saw last.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { StoredMessage } from "chat-gateway";
import type { AnswerEvent } from "./answer-follower.js";
import { channelOfModel, listModels } from "./channel-models.js";
import { continuationKey, continuedAnswer } from "./conversation-keys.js";
import type { DoorContext } from "./door-context.js";
import { followAnswer, sendConversation, sendInto, type DoorTurn, type SentMessage } from "./door-turn.js";
import { readJsonBody } from "./json-body.js";
import { DoorError, invalidRequest, sendError, sendJson } from "./openai-errors.js";
import {
  RESPONSE_SEQ,
  ResponseEvents,
  replayAnswer,
  responseObject,
  type ResponseHead,
  type ResponseState,
} from "./response-events.js";
import { answerIdOf, readResponsesRequest, type ResponsesRequest } from "./responses-input.js";
import { EventStream } from "./sse.js";

function noSuchResponse(messageId: string): DoorError {
  return new DoorError(404, "not_found_error", `no response "resp_${messageId.slice(0, 128)}"`, "response_not_found");
}

/** The owner's answer a response id names; another owner's, or a user message, is 404 as an unknown one. */
async function answerOf(turn: DoorTurn, messageId: string): Promise<StoredMessage> {
  const answer = await turn.ctx.storage.getMessage(turn.session.owner, messageId);
  if (answer?.role !== "assistant") throw noSuchResponse(messageId);
  return answer;
}

/** Sends the input's last message: after the answer it continues, or where its conversation is. */
async function sendInput(turn: DoorTurn, request: ResponsesRequest): Promise<SentMessage> {
  const last = { text: request.last, images: request.images };
  if (request.previous === undefined) return sendConversation(turn, request.model, request.earlier, last);
  await channelOfModel({ storage: turn.ctx.storage, owner: turn.session.owner }, request.model);
  const answer = await answerOf(turn, request.previous);
  const lane = { chat_id: answer.chat_id, thread_id: answer.thread_id ?? null };
  return sendInto(turn, lane, last, continuationKey(request.previous, request.last));
}

/** Writes a response's events as named server-sent events, from the answer's start to its end. */
function streamEvents(
  ctx: DoorContext,
  res: ServerResponse,
  head: (messageId: string) => ResponseHead,
  after: number,
): (event: AnswerEvent) => void {
  const stream = new EventStream(res, ctx.keepAliveMs);
  let events: ResponseEvents | undefined;
  return (event) => {
    if (event.type === "start")
      events = new ResponseEvents(head(event.messageId), after, (e) => stream.event(e.type as string, e));
    if (event.type === "gone") {
      // Not one of the response's numbered events: it says this stream ended early, not how the answer did.
      const seq = events?.last ?? Math.max(after, 0);
      stream.event("error", {
        type: "error",
        code: "server_error",
        message: event.reason,
        param: null,
        sequence_number: seq,
      });
      return stream.end();
    }
    events?.handle(event);
    if (event.type === "end") stream.end();
  };
}

/** The whole response, once its answer ended. */
function wholeResponse(res: ServerResponse, head: (messageId: string) => ResponseHead): (event: AnswerEvent) => void {
  return (event) => {
    if (event.type === "gone")
      return sendError(res, new DoorError(503, "server_error", event.reason, "unavailable", 1));
    if (event.type !== "end") return;
    const { end } = event;
    sendJson(res, 200, responseObject(head(end.messageId), { reasoning: end.reasoning, text: end.text, end }));
  };
}

/** `POST /v1/responses`. */
export async function createResponse(ctx: DoorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = readResponsesRequest(await readJsonBody(req, ctx.maxBodyBytes, ctx.bodyTimeoutMs));
  // When the user's message was stored, as a retrieve reads it again.
  let askedAt = Date.now();
  let model = request.model;
  const head = (messageId: string): ResponseHead => ({
    messageId,
    model,
    createdAt: Math.floor(askedAt / 1000),
    previousResponseId: request.previous === undefined ? null : `resp_${request.previous}`,
  });
  await followAnswer(
    ctx,
    req,
    res,
    "openai",
    async (turn) => {
      const sent = await sendInput(turn, request);
      askedAt = sent.ts ?? askedAt;
      model = await modelOf(turn, sent.lane.chat_id);
      return { sent, emit: request.stream ? streamEvents(ctx, res, head, -1) : wholeResponse(res, head) };
    },
    { media: request.images.length > 0 },
  );
}

/** What `GET /v1/responses/{id}` asks: the object, or its events after `starting_after`. */
interface RetrieveQuery {
  stream: boolean;
  after: number;
}

function readRetrieveQuery(req: IncomingMessage): RetrieveQuery {
  const params = new URL(req.url ?? "/", "http://door").searchParams;
  const stream = params.get("stream");
  if (stream !== null && stream !== "true" && stream !== "false") throw invalidRequest("stream must be true or false");
  const raw = params.get("starting_after");
  if (raw !== null && !/^\d{1,10}$/.test(raw))
    throw invalidRequest("starting_after must be a sequence number", "invalid_starting_after");
  const after = raw === null ? -1 : Number(raw);
  if (after > RESPONSE_SEQ.terminal) throw invalidRequest("starting_after is past the response's last event");
  return { stream: stream === "true", after };
}

/** How far a stored answer is. */
function stateOf(answer: StoredMessage): ResponseState {
  const state = { reasoning: answer.reasoning, text: answer.text };
  if (answer.status === "streaming") return state;
  const end = {
    messageId: answer.message_id,
    status: answer.status ?? "complete",
    ...state,
    ...(answer.tokens !== undefined ? { tokens: answer.tokens } : {}),
    ...(answer.model !== undefined ? { model: answer.model } : {}),
  };
  return { ...state, end };
}

/** A channel's name as `/v1/models` lists it: what a response names as its model. */
async function modelOf(turn: DoorTurn, chatId: string): Promise<string> {
  const models = await listModels({ storage: turn.ctx.storage, owner: turn.session.owner });
  return models.find((m) => m.chatId === chatId)?.id ?? chatId;
}

/**
 * A stored response's head, as its request's was: created when the user's message was stored,
 * continuing the answer its key names; the model is the channel's name as `/v1/models` lists it.
 */
async function storedHead(turn: DoorTurn, answer: StoredMessage): Promise<ResponseHead> {
  const asked =
    answer.reply_to === undefined ? undefined : await turn.ctx.storage.getMessage(turn.session.owner, answer.reply_to);
  const previous = continuedAnswer(asked?.client_msg_id);
  return {
    messageId: answer.message_id,
    model: await modelOf(turn, answer.chat_id),
    createdAt: Math.floor((asked?.ts ?? answer.ts) / 1000),
    previousResponseId: previous === undefined ? null : `resp_${previous}`,
  };
}

/**
 * `GET /v1/responses/{id}`: the stored response, or (`stream=true`) its events after
 * `starting_after`: replayed from history once the answer ended, followed live while it runs.
 */
export async function retrieveResponse(
  ctx: DoorContext,
  req: IncomingMessage,
  res: ServerResponse,
  responseId: string,
): Promise<void> {
  const messageId = answerIdOf(responseId);
  const query = readRetrieveQuery(req);
  await followAnswer(ctx, req, res, "openai", async (turn) => {
    const answer = await answerOf(turn, messageId);
    const head = await storedHead(turn, answer);
    const state = stateOf(answer);
    if (!query.stream) {
      sendJson(res, 200, responseObject(head, state));
      return undefined;
    }
    const emit = streamEvents(ctx, res, () => head, query.after);
    if (state.end || answer.reply_to === undefined) {
      // Ended (or not a reply, so nothing to follow): the stored answer is the whole story.
      replayAnswer(emit, state);
      if (!state.end) emit({ type: "gone", reason: "this answer cannot be followed; retrieve it once it ends" });
      return undefined;
    }
    const lane = { chat_id: answer.chat_id, thread_id: answer.thread_id ?? null };
    return { sent: { messageId: answer.reply_to, lane }, emit };
  });
}
