/**
 * The gate of login protection, applied to a request (`LoginProtection.handle`) and to a
 * WebSocket upgrade (`LoginProtection.authorizeUpgrade`): which paths are open, which need a
 * session, and what a refusal answers (docs/PROTOCOL.md §9).
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger, Session, UpgradeDecision } from "chat-gateway";
import { sendJson, serveAuthApi, type AuthContext } from "./auth-api.js";
import { isDevicesPath, serveDevices, type DevicesContext } from "./devices-api.js";
import { isKeysPath, serveKeys } from "./keys-api.js";
import { canonicalPath, isGatedPath, isSignedPath, PUBLIC_PATHS, readCredential } from "./gate.js";
import { WritableByOthers } from "./private-file.js";

/** A failure as logged: a refused file by its one line (naming the file and the fix), anything else with its stack. */
function failure(error: unknown): string {
  if (error instanceof WritableByOthers) return error.message;
  return (error as Error)?.stack ?? String(error);
}

/**
 * `LoginProtection.handle`: while login is off, a request must name a host of this machine
 * (DNS rebinding); the auth API is served; a gated path needs a valid session while login is on.
 */
export async function handleRequest(
  dctx: DevicesContext,
  signedIn: WeakMap<IncomingMessage, string>,
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  const pathname = canonicalPath(req.url);
  const ctx = dctx.auth;
  try {
    const refusal = (await ctx.enabled()).on ? undefined : ctx.guard.host(req);
    if (refusal !== undefined) {
      sendJson(res, refusal.status, { error: refusal.message });
      return true;
    }
    if (!isGatedPath(pathname)) return false;
    if (PUBLIC_PATHS.has(pathname)) {
      await serveAuthApi(ctx, pathname, req, res);
      return true;
    }
    if (isSignedPath(pathname)) return false;
    if (isDevicesPath(pathname)) {
      await serveDevices(dctx, pathname, req, res);
      return true;
    }
    if (isKeysPath(pathname)) {
      await serveKeys(ctx, pathname, req, res);
      return true;
    }
    if (!(await ctx.enabled()).on) return false;
    const session = await ctx.sessionOf(req);
    if (session === undefined) {
      sendJson(res, 401, { error: "login required" });
      return true;
    }
    signedIn.set(req, session.username);
    return false;
  } catch (error) {
    logger.error(`login protection failed on ${req.method} ${pathname}: ${failure(error)}`);
    if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
    else res.destroy();
    return true;
  }
}

/** `LoginProtection.authorizeUpgrade`: the same gate, answered as a decision instead of a response. */
export async function gateUpgrade(
  ctx: AuthContext,
  validSession: (token: string) => Promise<Session | undefined>,
  logger: Logger,
  req: IncomingMessage,
): Promise<UpgradeDecision> {
  const pathname = canonicalPath(req.url);
  try {
    if (!(await ctx.enabled()).on) {
      const refusal = ctx.guard.host(req) ?? ctx.guard.origin(req);
      return refusal === undefined ? { ok: true } : { ok: false, ...refusal };
    }
    // The public endpoints are not WebSocket endpoints: an upgrade there is gated like any other.
    if (!isGatedPath(pathname)) return { ok: true };
    const credential = readCredential(req, ctx.cookieName(req));
    const session = credential === undefined ? undefined : await validSession(credential.token);
    if (credential === undefined || session === undefined) return { ok: false, status: 401, message: "login required" };
    const foreign = credential.via === "cookie" ? ctx.guard.origin(req) : undefined;
    if (foreign !== undefined) return { ok: false, ...foreign };
    return { ok: true, context: { session: { username: session.username, token: session.token } } };
  } catch (error) {
    logger.error(`login protection failed on upgrade ${pathname}: ${failure(error)}`);
    return { ok: false, status: 500, message: "internal error" };
  }
}
