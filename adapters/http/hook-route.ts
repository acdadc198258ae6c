/**
 * `POST /api/hooks/{hook_id}`: a signed webhook post into an automation channel
 * (docs/PROTOCOL.md §17). The signature is the credential: no login session is needed.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { addressKey, type Gateway, type Owner } from "chat-gateway";
import type { HookRecord, HookStore } from "chat-gateway/storage";
import { isGatewayError } from "chat-gateway/protocol";
import { BodyError, readBody, sendJson } from "./auth-api.js";
import { AddressRate } from "./address-rate.js";
import { canonicalPath } from "./gate.js";
import { HOOK_TOLERANCE_SECONDS, parseHookSignature, verifyHookSignature } from "./hook-signature.js";
import { memoryHookBudget, type HookPostBudget } from "./hook-budget.js";

/** The numbers of webhooks (docs/PROTOCOL.md §17). */
export const HOOK_LIMITS = {
  /**
   * Refused requests (unknown hook, bad or replayed signature, bad body) one client address (an
   * IPv6 /64) may make a minute; past it the address is answered 429 until its minute ends.
   */
  refusalsPerMinute: 30,
  /** Largest body, bytes. */
  maxBodyBytes: 64 * 1024,
  /** Authentic posts a minute per hook. */
  postsPerMinute: 60,
  /** How long an `Idempotency-Key` answers its first `message_id`, ms. */
  idempotencyMs: 24 * 60 * 60 * 1000,
  /** Longest `Idempotency-Key`, characters. */
  maxKeyLength: 200,
} as const;

/** Options of {@link createHookHandler}. */
export interface HookHandlerOptions {
  /** The gateway the posts go into; its `hookStore` (a `createGateway` option) keeps the hooks. */
  gateway: Gateway;
  /** The route's path prefix; the hook id is the one path segment after it. Default `"/api/hooks/"`. */
  prefix?: string;
  /** Clock, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /** Receives unexpected failures (the sender gets a bare 500). Default `console.error`. */
  onError?: (error: unknown) => void;
  /**
   * Where the 60 posts a minute per hook are counted. Default: in this process, so with several
   * gateway processes a hook gets 60 a minute from each; give `redisHookBudget(redis)` of
   * `chat-gateway/redis` to hold the limit across all of them. Should the shared budget fail (Redis
   * down), the post is counted in this process instead.
   */
  postBudget?: HookPostBudget;
  /**
   * The client address whose refused requests are counted (an IPv6 address by its /64). Default
   * the socket's peer; behind a reverse proxy give the address the proxy saw, e.g.
   * `(req) => clientIp(req, 1)`, or every sender shares the proxy's budget.
   */
  clientAddress?: (req: IncomingMessage) => string | undefined;
}

/** Answers a request when it is for the hook route; resolves false for any other path. */
export type HookHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** A lone surrogate: with the `u` flag a well-formed pair is one code point and does not match. */
const LONE_SURROGATE = /\p{Cs}/u;

/** One answer for every bad signature: which check failed is not said. */
const UNAUTHORIZED = { error: "missing, wrong or stale signature" };

/**
 * Serves `POST <prefix><hook_id>` with `X-Hook-Signature` (see `signHookBody`). Answers 202
 * `{message_id}` once the post (mode `post`) or the turn's answer (mode `turn`) is stored, and
 * raises `notification {kind: "cron"}`; 401 for a missing, wrong or stale signature alike; 404
 * for an unknown hook; 409 for a signature seen before; 413 over 64 KiB; 429 over 60 posts a
 * minute per hook, and to an address past 30 refused requests a minute. A refused request spends
 * nothing of the hook's minute, so a replayed capture cannot lock the real sender out. Place it before the login gate, or let `createLoginProtection` pass the
 * prefix (it does for `/api/hooks/`).
 */
export function createHookHandler(options: HookHandlerOptions): HookHandler {
  if (!options?.gateway) throw new TypeError("createHookHandler: options.gateway is required");
  const hooks = options.gateway.options.hookStore;
  if (!hooks)
    throw new TypeError(
      "createHookHandler: the gateway has no hookStore; give createGateway one (the built-in storages are one: hookStore: storage)",
    );
  const prefix = options.prefix ?? "/api/hooks/";
  if (!prefix.startsWith("/") || !prefix.endsWith("/"))
    throw new TypeError(`createHookHandler: prefix must start and end with "/", got ${JSON.stringify(prefix)}`);
  const now = options.now ?? Date.now;
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const local = memoryHookBudget(HOOK_LIMITS.postsPerMinute);
  const shared = options.postBudget;
  const budget: HookPostBudget = shared
    ? {
        take: (hookId, at) =>
          shared.take(hookId, at).catch((error: unknown) => {
            onError(error);
            return local.take(hookId, at);
          }),
      }
    : local;
  const clientAddress = options.clientAddress ?? ((req: IncomingMessage) => req.socket.remoteAddress);
  const ctx: RouteContext = {
    gateway: options.gateway,
    hooks,
    now,
    budget,
    refusals: new AddressRate(HOOK_LIMITS.refusalsPerMinute, 60),
    swept: now(),
  };

  return async (req, res) => {
    // The canonical path, as the login gate reads it: what the gate lets through unsigned
    // (/api/hooks/…, any spelling) is answered here and reaches no other route.
    const path = canonicalPath(req.url);
    if (!path.startsWith(prefix.toLowerCase())) return false;
    const hookId = path.slice(prefix.length);
    try {
      if (req.method !== "POST") {
        req.resume();
        sendJson(res, 405, { error: "use POST" }, { allow: "POST" });
      } else await serveCounted(ctx, addressKey(clientAddress(req) ?? "unknown"), hookId, req, res);
    } catch (error) {
      onError(error);
      if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
      else res.destroy();
    }
    return true;
  };
}

interface RouteContext {
  gateway: Gateway;
  hooks: HookStore;
  now: () => number;
  budget: HookPostBudget;
  /** Refused requests per client address: a flood of replays or guesses is answered 429 cheaply. */
  refusals: AddressRate;
  /** When the refusal windows were last swept, ms. */
  swept: number;
}

/**
 * An address past its refusals is answered 429 before anything is read or looked up; a request
 * answered 4xx (other than the hook's own 429) counts one refusal of its address.
 */
async function serveCounted(
  ctx: RouteContext,
  address: string,
  hookId: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const at = ctx.now();
  if (at - ctx.swept >= 60_000) {
    ctx.refusals.sweep(at);
    ctx.swept = at;
  }
  const wait = ctx.refusals.wait(address, at);
  if (wait !== undefined) {
    req.resume();
    return sendJson(
      res,
      429,
      { error: "too many refused requests from this address", retry_after: wait },
      { "retry-after": String(wait), connection: "close" },
    );
  }
  await serve(ctx, hookId, req, res);
  if (res.statusCode >= 400 && res.statusCode < 500 && res.statusCode !== 429) ctx.refusals.take(address, at);
}

async function serve(ctx: RouteContext, hookId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const found =
    hookId.length > 0 && hookId.length <= 200 && !hookId.includes("/") ? await ctx.hooks.getHook(hookId) : undefined;
  if (!found) {
    req.resume();
    return sendJson(res, 404, { error: "unknown hook" });
  }
  let body: Buffer;
  try {
    body = await readBody(req, HOOK_LIMITS.maxBodyBytes);
  } catch (error) {
    if (error instanceof BodyError)
      return sendJson(res, error.status, { error: error.message }, { connection: "close" });
    throw error;
  }
  const signature = parseHookSignature(req.headers["x-hook-signature"]);
  const at = ctx.now();
  if (!signature || !verifyHookSignature(found.hook.secret, body, signature, at))
    return sendJson(res, 401, UNAUTHORIZED);
  const post = parsePost(body);
  if (typeof post === "string") return sendJson(res, 400, { error: post });
  const idempotencyKey = req.headers["idempotency-key"];
  if (
    idempotencyKey !== undefined &&
    (typeof idempotencyKey !== "string" || idempotencyKey === "" || idempotencyKey.length > HOOK_LIMITS.maxKeyLength)
  ) {
    return sendJson(res, 400, { error: `Idempotency-Key must be 1 to ${HOOK_LIMITS.maxKeyLength} characters` });
  }
  await deliver(
    ctx,
    found,
    post,
    { v1: signature.v1, expiresAt: (signature.t + HOOK_TOLERANCE_SECONDS + 1) * 1000, idempotencyKey, at },
    res,
  );
}

interface Claims {
  v1: string;
  expiresAt: number;
  idempotencyKey: string | undefined;
  at: number;
}

/**
 * The idempotency key first: a sender retrying a post it never heard back from resends the very
 * same request, and must get the first `message_id`, not 409. Then the signature, once per window.
 * Only then the hook's minute: a replay or a repeat spends none of it (docs/PROTOCOL.md §17.2).
 */
async function deliver(
  ctx: RouteContext,
  found: { owner: Owner; hook: HookRecord },
  post: { text: string; title?: string },
  claims: Claims,
  res: ServerResponse,
): Promise<void> {
  const { gateway, hooks } = ctx;
  const { hook, owner } = found;
  const idem = claims.idempotencyKey === undefined ? undefined : `idem:${claims.idempotencyKey}`;
  if (idem) {
    const held = await hooks.claimHookKey(hook.hook_id, idem, claims.at + HOOK_LIMITS.idempotencyMs, claims.at);
    if (!held.claimed)
      return held.message_id
        ? sendJson(res, 202, { message_id: held.message_id })
        : sendJson(res, 409, { error: "a post with this Idempotency-Key is still running" });
  }
  const sig = `sig:${claims.v1}`;
  const fresh = await hooks.claimHookKey(hook.hook_id, sig, claims.expiresAt, claims.at);
  if (!fresh.claimed) {
    if (idem) await hooks.settleHookKey(hook.hook_id, idem, null);
    return sendJson(res, 409, { error: "this signature was used already" });
  }
  const retryAfter = await ctx.budget.take(hook.hook_id, claims.at);
  if (retryAfter > 0) {
    // Nothing was posted: both keys are given up, so the same request may be sent again later.
    await hooks.settleHookKey(hook.hook_id, sig, null);
    if (idem) await hooks.settleHookKey(hook.hook_id, idem, null);
    return sendJson(
      res,
      429,
      { error: "too many posts to this hook", retry_after: retryAfter },
      { "retry-after": String(retryAfter) },
    );
  }
  let messageId: string;
  try {
    const message = await gateway.post(
      owner,
      hook.chat_id,
      hook.mode === "turn" ? { prompt: post.text } : { text: post.text },
    );
    messageId = message.message_id;
  } catch (error) {
    // Nothing landed: the idempotency key is given up so that a retry runs the post.
    if (idem) await hooks.settleHookKey(hook.hook_id, idem, null);
    if (isGatewayError(error) && error.code === "not_found")
      return sendJson(res, 404, { error: "the hook's channel no longer exists" });
    if (isGatewayError(error) && error.code === "unsupported")
      return sendJson(res, 503, { error: "the gateway is not running" }, { "retry-after": "5" });
    throw error;
  }
  if (idem) await hooks.settleHookKey(hook.hook_id, idem, messageId);
  await hooks.settleHookKey(hook.hook_id, sig, messageId);
  await gateway.notify(owner, {
    kind: "cron",
    title: post.title ?? hook.name,
    body: preview(post.text),
    chat_id: hook.chat_id,
    // The posted message is pushed as answers are: with it, the notification is the same push.
    message_id: messageId,
  });
  sendJson(res, 202, { message_id: messageId });
}

/** The body `{text, title?}`, or why it is refused. */
function parsePost(body: Buffer): { text: string; title?: string } | string {
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    return "the body must be JSON {text, title?}";
  }
  const { text, title } = (value && typeof value === "object" ? value : {}) as Record<string, unknown>;
  if (typeof text !== "string" || text.trim() === "") return `field "text" must be non-empty text`;
  if (title !== undefined && (typeof title !== "string" || title.trim() === "" || title.length > 200))
    return `field "title" must be 1 to 200 characters`;
  // As for a frame (docs/PROTOCOL.md §1): text no storage can keep is refused here, not by the database.
  if ([text, title].some((t) => typeof t === "string" && (t.includes("\u0000") || LONE_SURROGATE.test(t))))
    return "the text must be valid Unicode without U+0000";
  return title === undefined ? { text } : { text, title };
}

function preview(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
