/**
 * The paired-device endpoints of docs/PROTOCOL.md §16: `POST /api/devices/pair`,
 * `POST /api/devices/lookup`, `POST /api/devices/redeem`, `GET /api/devices` and
 * `DELETE /api/devices/{device_id}`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { addressKey } from "chat-gateway";
import type { AddressRate } from "./address-rate.js";
import { sessionCookie } from "./cookies.js";
import { LOGIN_LIMITS } from "./limits.js";
import {
  BodyError,
  passwordMatches,
  readJson,
  refuseCrossSite,
  revokeDevices,
  sendJson,
  tooMany,
  type AuthContext,
} from "./auth-api.js";
import {
  createDeviceId,
  createDeviceToken,
  deviceTokenDigest,
  type DeviceTokenStore,
  type PairedDevice,
  type StoredDevice,
} from "./device-store.js";
import { clientIp, isTls, readCredential } from "./gate.js";
import type { PairingCodes } from "./pairing-codes.js";
import { endReplaced, mayReplace, refuseOtherSite } from "./redeem-guard.js";

/** What the device endpoints need besides the login context. */
export interface DevicesContext {
  auth: AuthContext;
  devices: DeviceTokenStore;
  codes: PairingCodes;
  /** Redeem attempts per client address. */
  redeems: AddressRate;
  /** Devices one user may have paired at once (option `maxDevicesPerUser`). */
  maxDevicesPerUser: number;
}

/** Longest device name, in characters. */
const MAX_NAME = 64;

/** Whether a path is one of the device endpoints. */
export function isDevicesPath(pathname: string): boolean {
  return pathname === "/api/devices" || pathname.startsWith("/api/devices/");
}

/** A device as `GET /api/devices` lists it: never its token digest. */
function listed(d: PairedDevice): Omit<PairedDevice, "username"> {
  return { device_id: d.device_id, name: d.name, created: d.created, last_seen: d.last_seen };
}

/** The JSON body as an object, or undefined after answering 400/413. */
export async function bodyOf(
  ctx: AuthContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Record<string, unknown> | undefined> {
  try {
    const body = await readJson(req, ctx.maxBodyBytes);
    if (typeof body === "object" && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
    sendJson(res, 400, { error: "send a JSON object" });
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    sendJson(res, error.status, { error: error.message }, error.status === 413 ? { connection: "close" } : {});
  }
  return undefined;
}

/** A device name from a body field: absent is `fallback`; else 1 to 64 characters. */
function nameOf(value: unknown, fallback: string): string | undefined {
  if (value === undefined || value === null) return fallback;
  return typeof value === "string" && value.trim().length > 0 && value.length <= MAX_NAME ? value.trim() : undefined;
}

/** Answers 405 unless the request's method is `allowed`; true when it answered. */
export function refuseMethod(req: IncomingMessage, res: ServerResponse, allowed: string): boolean {
  if (req.method === allowed) return false;
  req.resume();
  sendJson(res, 405, { error: `method ${req.method} not allowed; use ${allowed}` }, { allow: allowed });
  return true;
}

/**
 * The pairing budget and lockout of the client address, shared by the look-up and the redeem so
 * that looking codes up guesses no faster than redeeming them: its address block, or undefined
 * after answering 429.
 */
async function admitted(
  dctx: DevicesContext,
  req: IncomingMessage,
  res: ServerResponse,
  now: number,
): Promise<string | undefined> {
  const ctx = dctx.auth;
  const ip = addressKey(clientIp(req, ctx.trustProxy));
  const retryAfter = dctx.redeems.take(ip, now);
  if (retryAfter !== undefined) {
    req.resume();
    tooMany(res, "too many pairing attempts from this address; try again later", retryAfter);
    return undefined;
  }
  const lock = ctx.lockoutStore ? await ctx.lockoutStore.check(ip, now) : ctx.lockout.check(ip, now);
  if (!lock.locked) return ip;
  req.resume();
  tooMany(res, "too many failed logins; try again later", lock.retryAfter);
  return undefined;
}

/** A wrong, used or expired code: a failed login of the address (docs/PROTOCOL.md §9.6), answered 401. */
async function refuseCode(ctx: AuthContext, ip: string, now: number, res: ServerResponse): Promise<void> {
  if (ctx.lockoutStore) await ctx.lockoutStore.fail(ip, now);
  else ctx.lockout.fail(ip, now);
  sendJson(res, 401, { error: "invalid, used or expired pairing code" });
}

/**
 * `POST /api/devices/lookup {code}`: the account and device name a code would pair this browser
 * with, without using it up, so that the person is asked before the redeem.
 */
async function lookup(dctx: DevicesContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const ctx = dctx.auth;
  if (refuseMethod(req, res, "POST") || refuseCrossSite(ctx, req, res) || refuseOtherSite(req, res)) return;
  const now = ctx.clock();
  const ip = await admitted(dctx, req, res, now);
  if (ip === undefined) return;
  const body = await bodyOf(ctx, req, res);
  if (body === undefined) return;
  if (typeof body.code !== "string" || body.code.length > 64) return sendJson(res, 400, { error: "send {code}" });
  const pending = dctx.codes.peek(body.code, Math.floor(now / 1000));
  const { users } = await ctx.enabled();
  if (pending === undefined || !users.has(pending.username)) return refuseCode(ctx, ip, now, res);
  sendJson(res, 200, { username: pending.username, name: pending.name, expires_at: pending.expires_at });
}

/**
 * `POST /api/devices/redeem {code, confirm: true, device_name?, replace_session?}`: no session
 * needed, so it is budgeted per address, locked out like a login, and a wrong, used or expired
 * code counts as a failed login. `confirm` says the person was asked; a signed-in session of
 * another user is replaced (and signed out) only with `replace_session: true`.
 */
async function redeem(dctx: DevicesContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const ctx = dctx.auth;
  if (refuseMethod(req, res, "POST") || refuseCrossSite(ctx, req, res) || refuseOtherSite(req, res)) return;
  const now = ctx.clock();
  const ip = await admitted(dctx, req, res, now);
  if (ip === undefined) return;
  const body = await bodyOf(ctx, req, res);
  if (body === undefined) return;
  const name = nameOf(body.device_name, "");
  const replace = body.replace_session ?? false;
  if (typeof body.code !== "string" || body.code.length > 64 || name === undefined) {
    return sendJson(res, 400, {
      error: `send {code, confirm: true, device_name?}: a code string and a name of 1 to ${MAX_NAME} characters`,
    });
  }
  if (body.confirm !== true || typeof replace !== "boolean") {
    return sendJson(res, 400, {
      error:
        "send confirm: true (and replace_session: true or false) once the person agreed to join the code's account",
    });
  }
  const current = await ctx.sessionOf(req);
  const seconds = Math.floor(now / 1000);
  const open = dctx.codes.peek(body.code, seconds);
  if (open !== undefined && !mayReplace(current, open.username, replace, res)) return;
  const pending = dctx.codes.take(body.code, seconds);
  const { users } = await ctx.enabled();
  if (pending === undefined || !users.has(pending.username)) return refuseCode(ctx, ip, now, res);
  if (current !== undefined && current.username !== pending.username) await endReplaced(ctx, dctx.devices, current);
  const token = createDeviceToken();
  const device = {
    device_id: createDeviceId(),
    username: pending.username,
    name: name || pending.name,
    created: seconds,
    last_seen: seconds,
  };
  const added = await dctx.devices.add(
    { ...device, ...pending.pairedBy, token_sha256: deviceTokenDigest(token) },
    dctx.maxDevicesPerUser,
  );
  if (added !== "added") return refuseDevice(dctx, res, added, pending.username);
  // A browser that redeems is signed in by it: the token becomes its session cookie (HttpOnly, as a login's).
  const cookie = sessionCookie(
    ctx.cookieName(req),
    token,
    isTls(req, ctx.trustProxy),
    LOGIN_LIMITS.deviceCookieSeconds,
  );
  sendJson(
    res,
    200,
    { device_id: device.device_id, token, username: device.username, name: device.name },
    { "set-cookie": cookie },
  );
}

/** Answers a pairing the store refused: the user's devices are at the cap, or the pairing device was revoked. */
function refuseDevice(dctx: DevicesContext, res: ServerResponse, why: "full" | "orphan", username: string): void {
  if (why === "orphan")
    return sendJson(res, 401, { error: "the device that asked for this pairing code was revoked; pair again" });
  sendJson(res, 429, {
    error: `${username} already has ${dctx.maxDevicesPerUser} paired devices, the most allowed; revoke one first`,
  });
}

/**
 * `POST /api/devices/pair {name?, password?}`: a pairing code for the signed-in user, and a URL
 * carrying it. Asked with a device token it needs the user's password (checked as a login is), and
 * the device it pairs is the asking device's child: revoked with it (docs/PROTOCOL.md §16).
 */
async function pair(
  dctx: DevicesContext,
  username: string,
  asking: StoredDevice | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const ctx = dctx.auth;
  if (refuseMethod(req, res, "POST") || refuseCrossSite(ctx, req, res)) return;
  const body = await bodyOf(ctx, req, res);
  if (body === undefined) return;
  const name = nameOf(body.name, "device");
  if (name === undefined) return sendJson(res, 400, { error: `name must be 1 to ${MAX_NAME} characters` });
  if (asking !== undefined) {
    // A device token alone never pairs: a stolen one would otherwise mint devices that outlive it.
    if (typeof body.password !== "string" || body.password.length > 1024)
      return sendJson(res, 403, { error: "pairing from a paired device needs the password: send {password}" });
    if (!(await passwordMatches(ctx, req, res, username, body.password, "wrong password"))) return;
  }
  if ((await dctx.devices.list(username)).length >= dctx.maxDevicesPerUser)
    return refuseDevice(dctx, res, "full", username);
  const pairedBy = asking === undefined ? undefined : asking.device_id;
  const { code, expires_at } = dctx.codes.create(username, name, Math.floor(ctx.clock() / 1000), pairedBy);
  const host = req.headers.host ?? "localhost";
  const url = `${isTls(req, ctx.trustProxy) ? "https" : "http"}://${host}/?pair=${code}`;
  sendJson(res, 200, { code, url, expires_at });
}

/** `DELETE /api/devices/{device_id}`: revokes one device of the signed-in user; its sockets close with 4401. */
async function revokeDevice(
  dctx: DevicesContext,
  username: string,
  deviceId: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (refuseMethod(req, res, "DELETE")) return;
  req.resume();
  // A cookie-authenticated DELETE from a foreign page would need a CORS preflight, but refuse it outright.
  const foreign = dctx.auth.guard.origin(req);
  if (foreign !== undefined) return sendJson(res, foreign.status, { error: foreign.message });
  const gone = await dctx.devices.remove(username, deviceId);
  if (gone.length === 0) return sendJson(res, 404, { error: "no such device" });
  revokeDevices(dctx.auth, gone);
  sendJson(res, 200, { ok: true });
}

/** Serves a device endpoint (`isDevicesPath(pathname)`). */
export async function serveDevices(
  dctx: DevicesContext,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (pathname === "/api/devices/redeem") return redeem(dctx, req, res);
  if (pathname === "/api/devices/lookup") return lookup(dctx, req, res);
  const session = (await dctx.auth.enabled()).on ? await dctx.auth.sessionOf(req) : undefined;
  if (session === undefined) {
    req.resume();
    return sendJson(res, 401, { error: "login required" });
  }
  if (pathname === "/api/devices/pair") {
    const credential = readCredential(req, dctx.auth.cookieName(req));
    const asking = credential && (await dctx.devices.find(deviceTokenDigest(credential.token)));
    return pair(dctx, session.username, asking, req, res);
  }
  if (pathname === "/api/devices") {
    if (refuseMethod(req, res, "GET")) return;
    req.resume();
    return sendJson(res, 200, { devices: (await dctx.devices.list(session.username)).map(listed) });
  }
  if (!/^\/api\/devices\/[^/]+$/.test(pathname)) {
    req.resume();
    return sendJson(res, 404, { error: "no such device" });
  }
  return revokeDevice(dctx, session.username, lastSegment(req), req, res);
}

/** The last path segment of the raw URL, decoded: canonicalPath lower-cases, and ids are mixed case. */
export function lastSegment(req: IncomingMessage): string {
  const last = new URL(req.url ?? "/", "http://x").pathname.split("/").pop() ?? "";
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}
