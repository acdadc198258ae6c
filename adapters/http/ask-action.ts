/**
 * `POST /api/asks/{picker_id}/act {token}`: an ask answered from a push's button
 * (docs/PROTOCOL.md §21). The action token is the credential: no login session is needed, and
 * the route reads no cookie. It answers through `gateway.actOnAsk`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { addressKey, type Gateway } from "chat-gateway";
import { AddressRate } from "./address-rate.js";
import { BodyError, readBody, sendJson } from "./auth-api.js";
import { canonicalPath } from "./gate.js";

/** The numbers of the act route. */
export const ASK_ACTION_LIMITS = {
  /** Largest body, bytes: `{"token": …}` is about 60. */
  maxBodyBytes: 1024,
  /** Refused requests (401) one client address (an IPv6 /64) may make a minute; then 429. */
  refusalsPerMinute: 30,
} as const;

/** Options of {@link createAskActionHandler}. */
export interface AskActionHandlerOptions {
  /** Receives unexpected failures (the client gets a bare 500); never given the token. Default `console.error`. */
  onError?: (error: unknown) => void;
  /** The client address whose refusals are counted. Default the socket's peer; behind a proxy, the address it saw. */
  clientAddress?: (req: IncomingMessage) => string | undefined;
  /** Clock, epoch milliseconds, for the refusal windows. Default `Date.now`. */
  now?: () => number;
}

/** Answers a request when it is for the act route; resolves false for any other path. */
export type AskActionHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** One body for every refused token: which check failed is not said. */
const UNAUTHORIZED = { error: "this action no longer works; open the app to answer" };
const GONE = { error: "the ask was already answered elsewhere, or is no longer open" };
/** An ask id as the gateway makes them (the doors' asks route takes the same). */
const ROUTE = /^\/api\/asks\/([A-Za-z0-9_-]{1,64})\/act$/;

/**
 * Serves `POST /api/asks/{picker_id}/act` with a JSON body `{"token": "…"}` (and optionally the
 * `option_id` the button stands for): 200 with the
 * `picker.resolved` payload, 401 (one body) for a bad, altered, other-owner or other-option token
 * whatever the ask's state, 410 for an ask resolved otherwise or expired, 400 for a body that is
 * not `{token}`, 405 for another method, 429 to an address past 30 refusals a minute. Place it
 * before the login gate. The token travels only in the body and is never logged.
 */
export function createAskActionHandler(gateway: Gateway, options: AskActionHandlerOptions = {}): AskActionHandler {
  if (!gateway || typeof gateway.actOnAsk !== "function")
    throw new TypeError("createAskActionHandler: a gateway is required");
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const clientAddress = options.clientAddress ?? ((req: IncomingMessage) => req.socket.remoteAddress);
  const now = options.now ?? Date.now;
  const refusals = new AddressRate(ASK_ACTION_LIMITS.refusalsPerMinute, 60);
  let swept = now();
  return async (req, res) => {
    // Matched on the path as sent (an ask id keeps its case); any other spelling is not this route.
    const match = ROUTE.exec((req.url ?? "").split("?", 1)[0]!);
    if (!match || !canonicalPath(req.url).startsWith("/api/asks/")) return false;
    const address = addressKey(clientAddress(req) ?? "unknown");
    try {
      if (now() - swept > 60_000) {
        refusals.sweep(now());
        swept = now();
      }
      const wait = refusals.wait(address, now());
      if (wait !== undefined) {
        req.resume();
        sendJson(res, 429, { error: "too many refused actions; try later" }, { "retry-after": String(wait) });
      } else if (req.method !== "POST") {
        req.resume();
        sendJson(res, 405, { error: "use POST" }, { allow: "POST" });
      } else {
        const status = await serve(gateway, match[1]!, req, res);
        if (status === 401) refusals.take(address, now());
      }
    } catch (error) {
      if (error instanceof BodyError) sendJson(res, error.status, { error: error.message });
      else {
        onError(error);
        if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
        else res.destroy();
      }
    }
    return true;
  };
}

async function serve(gateway: Gateway, pickerId: string, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readBody(req, ASK_ACTION_LIMITS.maxBodyBytes);
  let parsed: { token?: unknown; option_id?: unknown } | null;
  try {
    parsed = JSON.parse(body.toString("utf8")) as { token?: unknown; option_id?: unknown } | null;
  } catch {
    parsed = null;
  }
  const token = parsed?.token;
  const optionId = parsed?.option_id;
  if (typeof token !== "string" || (optionId !== undefined && typeof optionId !== "string")) {
    sendJson(res, 400, { error: 'the body must be JSON {"token": "…"}, with an optional "option_id"' });
    return 400;
  }
  const outcome = await gateway.actOnAsk(pickerId, token, optionId);
  if (outcome.status === 200) sendJson(res, 200, outcome.payload);
  else sendJson(res, outcome.status, outcome.status === 401 ? UNAUTHORIZED : GONE);
  return outcome.status;
}
