/**
 * What the ws adapter answers an upgrade before it takes it: the Host and Origin rules, the
 * application's upgrade gate in time, and the gateway's admission (docs/PROTOCOL.md §18.5), each
 * refusal an HTTP status with a JSON body `{error}` on a socket that is then closed.
 * @module
 */
import http, { type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Gateway, UpgradeDecision } from "chat-gateway";
import { upgradeGuard, type UpgradeGuardOptions } from "./upgrade-guard.js";

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Answer an upgrade with an HTTP error and destroy the socket once the answer is written. */
export function refuse(socket: Duplex, status: number, message: string, extra: { retryAfterMs?: number } = {}): void {
  if (socket.destroyed) return;
  const ms = extra.retryAfterMs;
  const body = JSON.stringify(ms === undefined ? { error: message } : { error: message, retry_after_ms: ms });
  const hint = ms === undefined ? "" : `Retry-After: ${Math.ceil(ms / 1000)}\r\nRetry-After-Ms: ${ms}\r\n`;
  socket.once("finish", () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? http.STATUS_CODES[status] ?? "Error"}\r\n${hint}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** A decision, or `undefined` when it did not come within `ms`. */
async function withDeadline<T>(work: Promise<T> | T, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([Promise.resolve(work), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The options of `attachWebSocket` that decide an upgrade. */
export interface GateOptions extends UpgradeGuardOptions {
  authorizeUpgrade?: (request: IncomingMessage) => Promise<UpgradeDecision> | UpgradeDecision;
}

/**
 * The origin/host guard and the upgrade gate, decided within `handshakeTimeoutMs`: the decision,
 * or undefined once the refusal is answered.
 */
export function upgradeGate(
  options: GateOptions,
  handshakeTimeoutMs: number,
  closing: () => boolean,
): (request: IncomingMessage, socket: Duplex) => Promise<Extract<UpgradeDecision, { ok: true }> | undefined> {
  const guard = upgradeGuard(options);
  return async (request, socket) => {
    if (closing()) return void refuse(socket, 503, "server shutting down");
    const refusal = guard?.(request);
    if (refusal) return void refuse(socket, refusal.status, refusal.message);
    if (!options.authorizeUpgrade) return { ok: true };
    let decision: UpgradeDecision | undefined;
    try {
      decision = await withDeadline(options.authorizeUpgrade(request), handshakeTimeoutMs);
    } catch {
      return void refuse(socket, 500, "internal error");
    }
    if (!decision) return void refuse(socket, 503, "upgrade not decided in time");
    if (!decision.ok) return void refuse(socket, decision.status, decision.message);
    return decision;
  };
}

/**
 * Hands the socket to the gateway's admission (docs/PROTOCOL.md §18.5): `upgrade` runs once there
 * is room, or the socket is answered 503 with the hint, `left` called first either way; a socket
 * that closes while it waits is withdrawn.
 */
export function waitForRoom(
  gateway: Gateway,
  socket: Duplex,
  address: string | undefined,
  maxWaitMs: number,
  upgrade: () => void,
  left: () => void = () => {},
): void {
  let withdraw: () => void = () => {};
  const gone = () => withdraw();
  // Listened to first: `take` may run at once, and it stops listening.
  socket.once("close", gone);
  withdraw = gateway.admitConnection({
    address,
    maxWaitMs,
    take() {
      socket.off("close", gone);
      left();
      if (!socket.destroyed) upgrade();
    },
    refuse(retryAfterMs) {
      socket.off("close", gone);
      left();
      refuse(socket, 503, `the server is busy; try again in ${retryAfterMs} ms`, { retryAfterMs });
    },
  });
}
