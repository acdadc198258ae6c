/**
 * The API key endpoints of docs/PROTOCOL.md §19.1: `GET /api/keys`, `POST /api/keys` and
 * `DELETE /api/keys/{key_id}`, for a signed-in user. A key itself is no credential here: a
 * stolen key cannot make keys.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  apiKeyDigest,
  apiKeyName,
  createApiKey,
  createApiKeyId,
  keyInfo,
  MAX_API_KEY_NAME,
  type ApiKeyInfo,
  type StoredApiKey,
} from "./api-key-store.js";
import { passwordMatches, refuseCrossSite, sendJson, type AuthContext } from "./auth-api.js";
import { deviceTokenDigest } from "./device-store.js";
import { bodyOf, lastSegment, refuseMethod } from "./devices-api.js";
import { readCredential } from "./gate.js";

/** Whether a path is one of the key endpoints. */
export function isKeysPath(pathname: string): boolean {
  return pathname === "/api/keys" || pathname.startsWith("/api/keys/");
}

/** A key as `GET /api/keys` lists it: never its hash. */
function listed(k: ApiKeyInfo): Omit<ApiKeyInfo, "username"> {
  return { key_id: k.key_id, name: k.name, created: k.created };
}

/**
 * Makes a key called `name` (checked by `apiKeyName`) for `username`, at most `maxKeysPerUser` of
 * them (one more is `full`) and one of a name (a second is `taken`). The key is returned here and
 * never again: only its SHA-256 is stored.
 */
export async function addApiKey(
  ctx: Pick<AuthContext, "keys" | "maxKeysPerUser">,
  username: string,
  name: string,
  now: number,
): Promise<{ key: string; stored: StoredApiKey } | "full" | "taken"> {
  const key = createApiKey();
  const stored = { key_id: createApiKeyId(), username, name, created: now, key_sha256: apiKeyDigest(key) };
  const added = await ctx.keys.add(stored, ctx.maxKeysPerUser);
  return added === "added" ? { key, stored } : added;
}

/**
 * `POST /api/keys {name, password?}`: a new key, shown once. Asked with a paired device's token
 * it needs the user's password (checked as a login is), as pairing does: a stolen device token
 * alone must not mint keys that outlive its revocation.
 */
async function create(ctx: AuthContext, username: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (refuseCrossSite(ctx, req, res)) return;
  const body = await bodyOf(ctx, req, res);
  if (body === undefined) return;
  const name = apiKeyName(body.name);
  if (name === undefined)
    return sendJson(res, 400, { error: `name must be 1 to ${MAX_API_KEY_NAME} printable characters` });
  const credential = readCredential(req, ctx.cookieName(req));
  const fromDevice = credential && (await ctx.devices.find(deviceTokenDigest(credential.token)));
  if (fromDevice !== undefined) {
    if (typeof body.password !== "string" || body.password.length > 1024)
      return sendJson(res, 403, { error: "making a key from a paired device needs the password: send {password}" });
    if (!(await passwordMatches(ctx, req, res, username, body.password, "wrong password"))) return;
  }
  const made = await addApiKey(ctx, username, name, Math.floor(ctx.clock() / 1000));
  if (made === "taken") return sendJson(res, 409, { error: `${username} already has a key named ${name}` });
  if (made === "full")
    return sendJson(res, 429, {
      error: `${username} already has ${ctx.maxKeysPerUser} API keys, the most allowed; remove one first`,
    });
  sendJson(res, 200, { ...listed(made.stored), key: made.key });
}

/** `DELETE /api/keys/{key_id}`: removes one key of the signed-in user; the connections it opened close with 4401. */
async function revoke(
  ctx: AuthContext,
  username: string,
  keyId: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (refuseMethod(req, res, "DELETE")) return;
  req.resume();
  const foreign = ctx.guard.origin(req);
  if (foreign !== undefined) return sendJson(res, foreign.status, { error: foreign.message });
  const gone = await ctx.keys.remove(username, keyId);
  if (gone === undefined) return sendJson(res, 404, { error: "no such key" });
  ctx.revoke({ session: gone.key_sha256 });
  sendJson(res, 200, { ok: true });
}

/** Serves a key endpoint (`isKeysPath(pathname)`); login must be on and the request signed in. */
export async function serveKeys(
  ctx: AuthContext,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const session = (await ctx.enabled()).on ? await ctx.sessionOf(req) : undefined;
  if (session === undefined) {
    req.resume();
    return sendJson(res, 401, { error: "login required" });
  }
  if (pathname === "/api/keys") {
    if (req.method === "POST") return create(ctx, session.username, req, res);
    if (refuseMethod(req, res, "GET")) return;
    req.resume();
    return sendJson(res, 200, { keys: (await ctx.keys.list(session.username)).map((k) => listed(keyInfo(k))) });
  }
  if (!/^\/api\/keys\/[^/]+$/.test(pathname)) {
    req.resume();
    return sendJson(res, 404, { error: "no such key" });
  }
  return revoke(ctx, session.username, lastSegment(req), req, res);
}
