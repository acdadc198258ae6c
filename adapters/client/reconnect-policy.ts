/**
 * When a client reconnects: whether a closed socket ends the client for good, and how long it waits
 * before the next attempt (backoff with jitter, a short spread after a restart, or the gateway's hint).
 * @module
 */
import { CLOSE_CODES } from "chat-gateway/protocol";
import type { ReconnectOptions } from "./options.js";
import { hintedDelay } from "./retry-hint.js";

/** What one socket learnt before it closed, to decide whether to retry. */
export interface Attempt {
  gotHello: boolean;
  httpStatus: number | undefined;
  helloRefusal: string | undefined;
  /** The hint of an upgrade the gateway shed (HTTP 503, `Retry-After-Ms`). */
  upgradeHint?: number;
  /** The upgrade carried an `Authorization` header (option `headers`). */
  sentAuthorization?: boolean;
}

/** A close after which the same attempt would fail again: the client stops in `state`. */
export interface FinalClose {
  state: "closed" | "unauthorized";
  reason: string;
}

/** Why a close ends the client for good, or undefined when it may retry. */
export function finalClose(event: { code: number; reason: string }, attempt: Attempt): FinalClose | undefined {
  if (attempt.httpStatus === 401) return { state: "unauthorized", reason: refusedUpgrade(attempt) };
  if (event.code === CLOSE_CODES.auth) return { state: "unauthorized", reason: "the gateway refused the credential" };
  if (event.code === CLOSE_CODES.protocolTooNew)
    return { state: "closed", reason: "the gateway speaks an older protocol than this client needs" };
  // 1008 after an error to hello: a field of the hello (a push target, `caps.push`) is invalid, so the
  // same hello would fail again.
  if (event.code === CLOSE_CODES.invalidHello && !attempt.gotHello) {
    const why = attempt.helloRefusal ?? (event.reason || "invalid hello");
    return { state: "closed", reason: `the gateway refused the hello: ${why}` };
  }
  return undefined;
}

/**
 * Why login protection refused the upgrade, and what to do: it reads the session or device token
 * from the upgrade's `Authorization: Bearer` header (or the browser's cookie) before the socket
 * opens, so `hello.token` comes too late for it (docs/PROTOCOL.md §9.2).
 */
function refusedUpgrade(attempt: Attempt): string {
  const why = "the server answered 401 to the upgrade";
  if (attempt.sentAuthorization)
    return `${why}: the token in the Authorization header is not a valid session or device token (signed out, expired or revoked); sign in or pair this device again`;
  return `${why}: it needs the session or device token before the WebSocket opens, so pass it as createGatewayClient's headers: { Authorization: \`Bearer \${token}\` } (the token option only travels in hello, after the upgrade)`;
}

/** What the last close asked of the next attempt. */
export interface RetryCause {
  /** Replace the socket at once (the caps changed). */
  atOnce: boolean;
  /** The gateway's retry hint (ms), from a 1013 or a shed upgrade's 503. */
  hint: number | undefined;
  /** The last close was 1012: the next attempt waits only a jitter. */
  restart: boolean;
}

/** The wait before attempt number `attempt` (counted from 0 since the last `hello.ok`). */
export function retryDelay(reconnect: ReconnectOptions | undefined, attempt: number, cause: RetryCause): number {
  if (cause.atOnce) return 0;
  if (cause.hint !== undefined) return hintedDelay(cause.hint);
  if (cause.restart) return restartDelay(reconnect);
  return backoffDelay(reconnect, attempt);
}

/** The wait before the next attempt: `min(max, initial * factor^attempt)`, less up to `jitter` of it. */
export function backoffDelay(reconnect: ReconnectOptions | undefined, attempt: number): number {
  const initial = reconnect?.initialDelayMs ?? 500;
  const max = reconnect?.maxDelayMs ?? 15_000;
  const factor = reconnect?.factor ?? 2;
  const jitter = Math.min(1, Math.max(0, reconnect?.jitter ?? 0.5));
  const full = Math.min(max, initial * factor ** attempt);
  return Math.round(full * (1 - jitter * Math.random()));
}

/**
 * The wait after a 1012 (server restart): at once, but spread at random over up to a second (or
 * `initialDelayMs`, when shorter) so the devices of a drained process do not all come back in the
 * same instant.
 */
function restartDelay(reconnect: ReconnectOptions | undefined): number {
  return Math.round(Math.min(reconnect?.initialDelayMs ?? 500, RESTART_SPREAD_MS) * Math.random());
}

/** The longest wait before reconnecting after a 1012 (ms). */
const RESTART_SPREAD_MS = 1_000;
