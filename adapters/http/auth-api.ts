import type { IncomingMessage, ServerResponse } from "node:http";
import { addressKey, type Revocation, type Session, type SessionStore } from "chat-gateway";
import { isGatewayError } from "chat-gateway/protocol";
import { clearedSessionCookie, sessionCookie } from "./cookies.js";
import type { AddressRate } from "./address-rate.js";
import { clientIp, isTls, readCredential, type TrustProxy } from "./gate.js";
import { LOGIN_LIMITS } from "./limits.js";
import type { LockoutStore, LoginLockout } from "./lockout.js";
import type { PasswordVerifier } from "./passwords.js";
import type { RequestGuard } from "./request-guard.js";
import type { ApiKeyStore } from "./api-key-store.js";
import { deviceTokenDigest, type DeviceTokenStore, type StoredDevice } from "./device-store.js";
import { createSessionToken, sessionId } from "./sessions.js";
import type { UserStore } from "./user-store.js";

/** What the endpoints share; built once by `createLoginProtection`. */
export interface AuthContext {
  users: UserStore;
  sessions: SessionStore;
  verifier: PasswordVerifier;
  lockout: LoginLockout;
  /** Failure counts and lockouts shared by processes; absent: {@link AuthContext.lockout} keeps them. */
  lockoutStore: LockoutStore | undefined;
  /** The session cookie's name for a request: it depends on TLS (docs/PROTOCOL.md §9.3). */
  cookieName(req: IncomingMessage): string;
  trustProxy: TrustProxy | undefined;
  maxBodyBytes: number;
  /** Logins waiting for an earlier login of the same IP; they count against the login queue. */
  waiting: { count: number };
  /** Milliseconds since the epoch. */
  clock: () => number;
  /** Whether login protection is on now, and the users. */
  enabled(): Promise<{ on: boolean; users: ReadonlyMap<string, string> }>;
  /** The valid session a request presents, if any (bearer beats cookie). */
  sessionOf(req: IncomingMessage): Promise<Session | undefined>;
  /** Logouts per client address. */
  logouts: AddressRate;
  /** The Origin rule of the login and logout posts. */
  guard: RequestGuard;
  /** Closes the connections a revocation covers, in every gateway subscribed. */
  revoke(revocation: Revocation): void;
  /** Paired devices (docs/PROTOCOL.md §16): a device token is a credential too. */
  devices: DeviceTokenStore;
  /** API keys (docs/PROTOCOL.md §19.1): credentials of the doors and `hello` only. */
  keys: ApiKeyStore;
  /** Keys one user may have at once. */
  maxKeysPerUser: number;
}

/** Closes the connections of revoked devices, in every gateway subscribed: a device's session id is its token digest. */
export function revokeDevices(ctx: AuthContext, gone: readonly StoredDevice[]): void {
  for (const d of gone) ctx.revoke({ session: d.token_sha256 });
}

/** Sends a JSON body; auth answers must never be cached. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(text);
}

/** A body the route refuses, with the HTTP status to answer. */
export class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const body = await readBody(req, limit);
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    throw new BodyError(400, "request body must be JSON");
  }
}

/** The raw body, at most `limit` bytes; over it rejects a {@link BodyError} of status 413. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > limit) {
      req.resume();
      reject(new BodyError(413, `request body over ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        req.resume();
        reject(new BodyError(413, `request body over ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks));
    });
    req.on("error", (error) => {
      if (!done) reject(error);
      done = true;
    });
  });
}

const METHODS: Record<string, readonly string[]> = {
  "/api/ping": ["GET", "HEAD"],
  "/api/auth/status": ["GET", "HEAD"],
  "/api/auth/login": ["POST"],
  "/api/auth/logout": ["POST"],
  "/api/auth/users": ["GET", "HEAD"],
};

/** Serves one of the public endpoints of docs/PROTOCOL.md §9.1; `pathname` is one of them. */
export async function serveAuthApi(
  ctx: AuthContext,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const allowed = METHODS[pathname]!;
  if (!allowed.includes(req.method ?? "")) {
    sendJson(
      res,
      405,
      { error: `method ${req.method} not allowed; use ${allowed.join(" or ")}` },
      { allow: allowed.join(", ") },
    );
    return;
  }
  // A bearer token is never sent by a browser on its own, so a post carrying one is no CSRF.
  const bearer = readCredential(req, ctx.cookieName(req))?.via === "bearer";
  if (req.method === "POST" && !(bearer && pathname === "/api/auth/logout") && refuseCrossSite(ctx, req, res)) return;
  switch (pathname) {
    case "/api/ping":
      return sendJson(res, 200, { ok: true });
    case "/api/auth/status": {
      const { on } = await ctx.enabled();
      const session = on ? await ctx.sessionOf(req) : undefined;
      return sendJson(res, 200, {
        enabled: on,
        user: session?.username ?? null,
        expires_at: session?.expires_at ?? null,
      });
    }
    case "/api/auth/users": {
      const { on, users } = await ctx.enabled();
      if (!on) return sendJson(res, 200, { users: [] });
      if ((await ctx.sessionOf(req)) === undefined) return sendJson(res, 401, { error: "login required" });
      return sendJson(res, 200, { users: [...users.keys()].sort() });
    }
    case "/api/auth/logout":
      return logout(ctx, req, res);
    case "/api/auth/login":
      return login(ctx, req, res);
  }
}

const JSON_TYPE = /^application\/json\s*(?:;|$)/i;

/**
 * Login CSRF: a page of another site can post a form or a `text/plain` body without asking first,
 * so the posts must be JSON (415 otherwise, which needs a CORS preflight cross-site) and must not
 * come from a foreign `Origin` (403). True when it answered.
 */
export function refuseCrossSite(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): boolean {
  const foreign = ctx.guard.origin(req);
  const refusal =
    foreign ??
    (JSON_TYPE.test(req.headers["content-type"] ?? "")
      ? undefined
      : { status: 415, message: "send the body as application/json" });
  if (refusal === undefined) return false;
  req.resume();
  sendJson(res, refusal.status, { error: refusal.message });
  return true;
}

/**
 * Ends the credential the request presents: a login session, or a paired device's token, which
 * revokes that device and the devices it paired (docs/PROTOCOL.md §16). Logout needs no account,
 * so it is budgeted per address, and only a credential that exists is revoked: made-up tokens
 * reach no connection.
 */
async function logout(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  const retryAfter = ctx.logouts.take(addressKey(clientIp(req, ctx.trustProxy)), ctx.clock());
  if (retryAfter !== undefined) return tooMany(res, "too many logouts from this address; try again later", retryAfter);
  const credential = readCredential(req, ctx.cookieName(req));
  if (credential !== undefined) await endCredential(ctx, credential.token);
  sendJson(
    res,
    200,
    { ok: true },
    { "set-cookie": clearedSessionCookie(ctx.cookieName(req), isTls(req, ctx.trustProxy)) },
  );
}

/** Ends a login session or a device token; their connections close even when the store fails to forget them (the answer is then 500). */
async function endCredential(ctx: AuthContext, token: string): Promise<void> {
  if ((await ctx.sessions.get(token, Math.floor(ctx.clock() / 1000))) !== undefined) {
    await ctx.sessions.delete(token).finally(() => ctx.revoke({ session: sessionId(token) }));
    return;
  }
  const device = await ctx.devices.find(deviceTokenDigest(token));
  if (device === undefined) return;
  try {
    revokeDevices(ctx, await ctx.devices.remove(device.username, device.device_id));
  } finally {
    ctx.revoke({ session: device.token_sha256 });
  }
}

export function tooMany(res: ServerResponse, error: string, retryAfter: number): void {
  sendJson(res, 429, { error, retry_after: retryAfter }, { "retry-after": String(retryAfter) });
}

async function login(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: unknown;
  try {
    body = await readJson(req, ctx.maxBodyBytes);
  } catch (error) {
    if (error instanceof BodyError) {
      return sendJson(res, error.status, { error: error.message }, error.status === 413 ? { connection: "close" } : {});
    }
    throw error;
  }
  const { username, password } = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof username !== "string" || typeof password !== "string") {
    return sendJson(res, 400, { error: "send {username, password} as strings" });
  }
  if (!(await passwordMatches(ctx, req, res, username, password, "invalid username or password"))) return;
  const now = ctx.clock();
  const seconds = Math.floor(now / 1000);
  const session: Session = { token: createSessionToken(), username, expires_at: seconds + LOGIN_LIMITS.sessionSeconds };
  await ctx.sessions.create(session, seconds);
  sendJson(
    res,
    200,
    { token: session.token, username, expires_at: session.expires_at },
    { "set-cookie": sessionCookie(ctx.cookieName(req), session.token, isTls(req, ctx.trustProxy)) },
  );
}

/**
 * Checks a user's password as a login does: the client address's lockout (docs/PROTOCOL.md §9.6), the bcrypt queue,
 * a failure counted against the address. True when it matched; otherwise it answered (401 with
 * `refusal`, or 429) and resolves false.
 */
export async function passwordMatches(
  ctx: AuthContext,
  req: IncomingMessage,
  res: ServerResponse,
  username: string,
  password: string,
  refusal: string,
): Promise<boolean> {
  const ip = addressKey(clientIp(req, ctx.trustProxy));
  for (;;) {
    const shared = ctx.lockoutStore ? await ctx.lockoutStore.check(ip, ctx.clock()) : undefined;
    const lock = shared ?? ctx.lockout.check(ip, ctx.clock());
    if (lock.locked) {
      tooMany(res, "too many failed logins; try again later", lock.retryAfter);
      return false;
    }
    if (ctx.verifier.pending + ctx.waiting.count >= ctx.verifier.capacity) {
      tooMany(res, "too many logins at once; try again shortly", 1);
      return false;
    }
    if (ctx.lockout.begin(ip, ctx.clock(), shared?.failures)) break;
    // This IP already has enough attempts in flight to be locked out by them: wait for one.
    ctx.waiting.count++;
    await ctx.lockout.settled(ip).finally(() => ctx.waiting.count--);
  }
  let matched: boolean;
  try {
    const { users } = await ctx.enabled();
    matched = await ctx.verifier.verify(password, users.get(username));
  } catch (error) {
    ctx.lockout.end(ip);
    if (!isGatewayError(error) || error.code !== "rate_limited") throw error;
    tooMany(res, error.message, 1);
    return false;
  }
  const now = ctx.clock();
  if (!matched) {
    try {
      if (ctx.lockoutStore) await ctx.lockoutStore.fail(ip, now);
      else ctx.lockout.fail(ip, now);
    } finally {
      ctx.lockout.end(ip);
    }
    sendJson(res, 401, { error: refusal });
    return false;
  }
  try {
    if (ctx.lockoutStore) await ctx.lockoutStore.succeed(ip);
    else ctx.lockout.succeed(ip);
  } finally {
    ctx.lockout.end(ip);
  }
  return true;
}
