/**
 * `chat-gateway/doors`: the HTTP doors of docs/PROTOCOL.md §19, through which apps that speak
 * OpenAI's Chat Completions or Responses reach the same conversations as the WebSocket devices. Each door is a
 * plain `(req, res)` handler built from a gateway: every request says hello as a device of its
 * bearer's owner, so limits, budgets, owner isolation and idempotency are the gateway's own.
 *
 * Start with {@link createDoors}. {@link createAskActionHandler} answers an ask from a push
 * notification's button (docs/PROTOCOL.md §21).
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Gateway } from "chat-gateway";
import { answerAsk, listAsks } from "./asks.js";
import { chatCompletions } from "./chat-completions.js";
import { doorContext, type DoorContext, type DoorOptions } from "./door-context.js";
import { models } from "./models.js";
import { createResponse, retrieveResponse } from "./responses.js";
import { resumeUiChat, uiChat } from "./ui-chat.js";
import { DoorError, sendError } from "./openai-errors.js";

export type { DoorOptions, DoorAuthorize } from "./door-context.js";
// An ask answered from a push's button (docs/PROTOCOL.md §21) is one more way in from outside,
// beside the asks over HTTP of docs/PROTOCOL.md §19.
export {
  ASK_ACTION_LIMITS,
  createAskActionHandler,
  type AskActionHandler,
  type AskActionHandlerOptions,
} from "../http/ask-action.js";
export { openDoorDevice } from "./door-device-open.js";
export type { OpenDoorDeviceOptions, OpenedDoorDevice } from "./door-device-open.js";
export type { DoorDevice, DoorFrame } from "./door-device.js";
export { AnswerFollower } from "./answer-follower.js";
export type { AnswerEvent, AnswerEnd } from "./answer-follower.js";
export { sendError as sendDoorError } from "./openai-errors.js";

/** A door: a plain Node request handler. */
export type DoorHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The doors of one gateway. */
export interface Doors {
  /**
   * Routes a request to its door: `GET /v1/models`, `GET /v1/models/{id}`,
   * `POST /v1/chat/completions`, `POST /v1/responses`, `GET /v1/responses/{id}`, and OpenAI's 404 or 405 for anything else under `/v1/`;
   * `GET /api/asks` and `POST /api/asks/{picker_id}`; `POST /api/chat` and
   * `GET /api/chat/{id}/stream`. Resolves false (answering nothing) for a
   * path that no door serves.
   */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** `GET /v1/models`. */
  models: DoorHandler;
  /** `POST /v1/chat/completions`. */
  chatCompletions: DoorHandler;
  /** `POST /v1/responses`. */
  responses: DoorHandler;
  /** `GET /api/asks`: the owner's open asks. */
  asks: DoorHandler;
  /** `POST /api/chat`: the AI SDK UI message stream (needs the package `ai`). */
  chat: DoorHandler;
}

/** Runs a door, answering whatever it throws in OpenAI's error shape. */
function guarded(
  ctx: DoorContext,
  door: (ctx: DoorContext, req: IncomingMessage, res: ServerResponse) => Promise<void>,
): DoorHandler {
  return async (req, res) => {
    try {
      await door(ctx, req, res);
    } catch (error) {
      sendError(res, error);
    }
  };
}

function pathOf(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? "/", "http://door").pathname;
  } catch {
    return "/";
  }
}

/**
 * The doors of a gateway, to mount on your own HTTP server.
 *
 * @example
 * ```ts
 * const doors = createDoors(gateway, { authorize: (req) => protection.authorizeUpgrade(req) });
 * http.createServer(async (req, res) => {
 *   if (await doors.handle(req, res)) return;
 *   // ... your other routes
 * });
 * ```
 * @throws {TypeError} on a bad option
 */
export function createDoors(gateway: Gateway, options: DoorOptions = {}): Doors {
  const ctx = doorContext(gateway, options);
  const modelList = guarded(ctx, (c, req, res) => models(c, req, res));
  const completions = guarded(ctx, chatCompletions);
  const responses = guarded(ctx, createResponse);
  const asks = guarded(ctx, listAsks);
  const chat = guarded(ctx, uiChat);
  return {
    chat,
    models: modelList,
    chatCompletions: completions,
    responses,
    asks,
    async handle(req, res) {
      const path = pathOf(req);
      const method = req.method ?? "GET";
      if (path === "/api/asks" || path.startsWith("/api/asks/")) {
        const id = path.slice("/api/asks/".length);
        if (path === "/api/asks" && method === "GET") await asks(req, res);
        else if (/^[A-Za-z0-9_-]{1,64}$/.test(id) && method === "POST")
          await guarded(ctx, (c, rq, rs) => answerAsk(c, rq, rs, id))(req, res);
        else if (path === "/api/asks" || /^[A-Za-z0-9_-]{1,64}$/.test(id))
          sendError(
            res,
            new DoorError(405, "invalid_request_error", `${method} is not allowed here`, "method_not_allowed"),
          );
        else sendError(res, new DoorError(404, "not_found_error", "no such ask", "not_found"));
        return true;
      }
      if (path === "/api/chat" && method === "POST") await chat(req, res);
      else if (/^\/api\/chat\/[^/]+(?:\/[^/]+)?\/stream$/.test(path) && method === "GET") {
        const id = path.slice("/api/chat/".length, -"/stream".length);
        await guarded(ctx, (c, rq, rs) => resumeUiChat(c, rq, rs, decodeURIComponent(id)))(req, res);
      } else if (!path.startsWith("/v1/")) return false;
      else return routeV1(path, method, req, res);
      return true;
    },
  };

  async function routeV1(path: string, method: string, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    if (path === "/v1/models" && method === "GET") await modelList(req, res);
    else if (path.startsWith("/v1/models/") && method === "GET") {
      await guarded(ctx, (c, rq, rs) => models(c, rq, rs, decodeURIComponent(path.slice("/v1/models/".length))))(
        req,
        res,
      );
    } else if (path === "/v1/chat/completions" && method === "POST") await completions(req, res);
    else if (path === "/v1/responses" && method === "POST") await responses(req, res);
    else if (/^\/v1\/responses\/[^/]+$/.test(path) && method === "GET") {
      const id = path.slice("/v1/responses/".length);
      await guarded(ctx, (c, rq, rs) => retrieveResponse(c, rq, rs, decodeURIComponent(id)))(req, res);
    } else if (
      ["/v1/models", "/v1/chat/completions", "/v1/responses"].includes(path) ||
      path.startsWith("/v1/models/") ||
      /^\/v1\/responses\/[^/]+$/.test(path)
    )
      sendError(
        res,
        new DoorError(405, "invalid_request_error", `${method} is not allowed here`, "method_not_allowed"),
      );
    else sendError(res, new DoorError(404, "not_found_error", `no route ${path.slice(0, 100)}`, "unknown_url"));
    return true;
  }
}
