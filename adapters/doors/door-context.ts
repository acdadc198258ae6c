/**
 * What every door of a gateway shares: the gateway, how a request is authorized, and the bounds.
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Gateway, UpgradeDecision } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";

/** Decides a door request before its hello, as an upgrade gate does (Host, Origin, login). */
export type DoorAuthorize = (req: IncomingMessage) => Promise<UpgradeDecision> | UpgradeDecision;

/** Options of {@link createDoors}. */
export interface DoorOptions {
  /**
   * Decides a request before its hello, as an upgrade gate does: pass the login protection's
   * `authorizeUpgrade` so a door meets the WebSocket's rules (Host and Origin while login is off).
   * The credential itself is the request's bearer, checked by the gateway's authenticator.
   */
  authorize?: DoorAuthorize;
  /**
   * The client's address, counted against the gateway's per-address caps (default the socket's
   * peer). Behind a reverse proxy, name the client from trusted proxy headers only.
   */
  clientAddress?: (req: IncomingMessage) => string | undefined;
  /** True while the server drains or cannot serve: every door answers 503 with `Retry-After`. */
  unavailable?: () => boolean;
  /** Largest request body, bytes (default 8 MiB); a larger one is 413. */
  maxBodyBytes?: number;
  /** How long a request body may take to arrive, ms (default 30,000). */
  bodyTimeoutMs?: number;
  /** A stream quiet this long gets a `: keep-alive` comment, ms (default 15,000). */
  keepAliveMs?: number;
  /**
   * How long a request waits for its answer to end, ms (default 30 min): past it a stream ends
   * with an error and the turn goes on (it lands in history).
   */
  maxWaitMs?: number;
}

/** The resolved options and the parts a door reads. */
export interface DoorContext {
  gateway: Gateway;
  storage: Storage;
  authorize: DoorAuthorize | undefined;
  clientAddress: (req: IncomingMessage) => string | undefined;
  unavailable: () => boolean;
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  keepAliveMs: number;
  maxWaitMs: number;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number, got ${value}`);
  return value;
}

/** Checks the options. @throws {TypeError} on a bad one */
export function doorContext(gateway: Gateway, options: DoorOptions): DoorContext {
  return {
    gateway,
    storage: gateway.options.storage,
    authorize: options.authorize,
    clientAddress: options.clientAddress ?? ((req) => req.socket.remoteAddress),
    unavailable: options.unavailable ?? (() => false),
    maxBodyBytes: positive("maxBodyBytes", options.maxBodyBytes, 8 << 20),
    bodyTimeoutMs: positive("bodyTimeoutMs", options.bodyTimeoutMs, 30_000),
    keepAliveMs: positive("keepAliveMs", options.keepAliveMs, 15_000),
    maxWaitMs: positive("maxWaitMs", options.maxWaitMs, 30 * 60_000),
  };
}
