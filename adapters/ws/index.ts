/**
 * The WebSocket transport (package `ws`): turns each socket into a `Connection` for the gateway.
 * It attaches to your existing `http.Server` at a path, or takes upgrades you route to it.
 * @module
 */
import http, { type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer, type PerMessageDeflateOptions } from "ws";
import type { ConnectionContext, Gateway, UpgradeDecision } from "chat-gateway";
import { LIMITS } from "chat-gateway/protocol";
import { startHeartbeat } from "./heartbeat.js";
import { serve } from "./serve.js";
import type { UpgradeGuardOptions } from "./upgrade-guard.js";
import { refuse, upgradeGate, waitForRoom } from "./upgrade-gate.js";
import { proxyHint } from "./proxy-hint.js";
import { paceSockets, pacingLimits, type PacingOptions } from "./socket-pacer.js";

export type { PacingOptions } from "./socket-pacer.js";

/**
 * Options of {@link attachWebSocket}. `allowedOrigins` / `allowedHosts` (default none besides the
 * server's own origin and loopback names; `"*"` for any): upgrades naming another `Host` are
 * answered 421 and those from a page of another `Origin` 403, without an `authorizeUpgrade` gate
 * or when either option is given (the login protection's gate applies the same rules itself).
 * A malformed entry makes `attachWebSocket` throw a TypeError.
 */
export interface WebSocketOptions extends Pick<UpgradeGuardOptions, "allowedOrigins" | "allowedHosts"> {
  /** The server whose `upgrade` events to take. Omit and call `handleUpgrade` yourself to route upgrades. */
  server?: Server;
  /**
   * Path to accept upgrades on (default `/ws/gateway`). An upgrade to another path is answered
   * 404 and its socket destroyed, unless the server has another `upgrade` listener to take it.
   */
  path?: string;
  /** Largest text or binary message in bytes (default: the gateway's `maxFrameBytes`, 1 MiB, plus chunk room for binary); larger closes with 1009. */
  maxPayload?: number;
  /**
   * WebSocket compression (RFC 7692 permessage-deflate), offered to clients that ask for it.
   * Default false: a device that takes delta updates (docs/PROTOCOL.md §12) already receives
   * about the answer's own bytes, while compression costs CPU per connection (the same frame is
   * compressed once for every device) and a zlib context per connection for as long as it is open.
   * `true` uses bounded settings ({@link BOUNDED_DEFLATE}: small frames sent as they are, an 8 KiB
   * window, fast level); or pass `ws`'s own options. Inflating what a client sends stops at
   * `maxPayload` (close 1009), so a compressed bomb cannot grow past it.
   */
  perMessageDeflate?: boolean | PerMessageDeflateOptions;
  /** Ping interval in milliseconds (default 30,000). */
  heartbeatMs?: number;
  /**
   * A ping not answered by its own pong within this many milliseconds terminates the socket
   * (default 10,000, or `heartbeatMs` if that is smaller). Pongs nobody asked for do not count.
   */
  pongTimeoutMs?: number;
  /**
   * Milliseconds an upgrade may take before the socket is destroyed (default 10,000): the
   * `authorizeUpgrade` decision here, and with {@link listenWebSocket} also the request headers
   * (a socket that connects and sends nothing). A socket waiting for room (`queueUpgrades`) is
   * answered 503 with a retry hint after as long. When you attach to your own server, bound the
   * headers there, and have Node check the bounds often enough (it does every 30 s by default, so a
   * socket may outlive them by as much): `http.createServer({ headersTimeout: 10_000,
   * requestTimeout: 30_000, connectionsCheckingInterval: 1_000 })`.
   */
  handshakeTimeoutMs?: number;
  /**
   * Milliseconds `close()` waits for the clients' close handshakes (default 1,000). A socket not
   * closed by then is destroyed: a client that stopped reading never answers its close frame, and
   * would hold the shutdown for the 30 s of `ws`'s own timeout (docs/PROTOCOL.md §18.1).
   */
  closeGraceMs?: number;
  /**
   * The client's address, counted against the gateway's `maxConnectionsPerIp` and passed to the
   * authenticator as `context.remoteAddress`. Default: the socket's peer address. Behind a reverse
   * proxy pass one that reads `X-Forwarded-For` from trusted proxies only, for example
   * `(req) => clientIp(req, trustProxy)` from `chat-gateway/login`.
   */
  clientAddress?: (request: IncomingMessage) => string | undefined;
  /**
   * Decide on each upgrade before it happens (login protection: `protection.authorizeUpgrade`).
   * A refusal answers the HTTP status with a JSON body and never upgrades.
   */
  authorizeUpgrade?: (request: IncomingMessage) => Promise<UpgradeDecision> | UpgradeDecision;
  /**
   * Hold each upgrade that passed the gate until the gateway has room for its hello
   * ({@link Gateway.admitConnection}), in arrival order, and answer one that cannot wait HTTP 503
   * with the retry hint in `Retry-After-Ms` (and `Retry-After`, in whole seconds) instead of
   * upgrading it (default true; docs/PROTOCOL.md §18.5). A held socket costs its parsed request,
   * not an upgrade and a hello queued behind a reconnect storm's others. With false every socket
   * is upgraded at once and a hello past `maxHellosInFlight` is shed with close 1013 and the hint.
   */
  queueUpgrades?: boolean;
  /**
   * Let the new sockets of `server` read their first request a window at a time, first come first
   * served (default true: 16 at once; docs/PROTOCOL.md §18.5): a reconnect storm's thousands of
   * requests are then parsed between the frames of the connections already in, not all in one
   * turn that holds those for hundreds of milliseconds. An upgrade waiting for room keeps its
   * place, so the rest of a storm waits unread rather than as parsed requests. One client address
   * (an IPv6 /64) holds at most 8 places, its other new sockets waiting behind its own, so its
   * silent sockets never delay another address's; and it may have at most 256 sockets open, one
   * more being closed as it is accepted (behind a reverse proxy every socket is the proxy's: raise
   * `maxSocketsPerAddress` and `windowPerAddress`). It applies to every socket of a plain
   * `http.Server`, not to a TLS one, and adds nothing while the server is idle. `false` turns it
   * off; {@link PacingOptions} tune it.
   */
  paceSockets?: boolean | PacingOptions;
}

/**
 * The compression settings behind `perMessageDeflate: true`: frames under 1 KiB (delta appends,
 * typing, acks) are not compressed; an 8 KiB window and memory level 6 keep each connection's
 * deflate context near 64 KiB instead of zlib's default 256 KiB; level 1 is the cheapest that
 * still finds the repeats of a full-text update.
 */
export const BOUNDED_DEFLATE: Readonly<PerMessageDeflateOptions> = Object.freeze({
  threshold: 1024,
  serverMaxWindowBits: 13,
  clientMaxWindowBits: 13,
  zlibDeflateOptions: { level: 1, memLevel: 6 },
  concurrencyLimit: 10,
});

/** The attached transport. */
export interface WebSocketTransport {
  /** The `ws` server (no own port). */
  readonly wss: WebSocketServer;
  /** Route an upgrade to the gateway yourself (when you did not pass `server`). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /**
   * Stop taking upgrades and close every socket with 1001 (one the gateway closed already keeps its
   * code); resolves once every socket is closed, those that did not finish their close handshake
   * within `closeGraceMs` destroyed.
   */
  close(): Promise<void>;
}

function pathOf(request: IncomingMessage): string {
  const url = request.url ?? "/";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

function peerAddress(request: IncomingMessage): string | undefined {
  const ip = request.socket.remoteAddress;
  return ip?.startsWith("::ffff:") ? ip.slice(7) : ip;
}

function milliseconds(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw new TypeError(`attachWebSocket: ${name} must be a positive number of milliseconds, got ${String(value)}`);
  return value;
}

/** Logs the first socket the pacer closes for its address's cap: behind an unannounced proxy that is every client's. */
function warnOnce(logger: Gateway["options"]["logger"]): (key: string) => void {
  let warned = false;
  return (key) => {
    if (warned) return;
    warned = true;
    logger.warn(
      `closed a new socket from ${key}: it has paceSockets.maxSocketsPerAddress sockets open; behind a reverse proxy ` +
        "every socket is the proxy's, so raise it (docs/PROTOCOL.md §18.5). Said once.",
    );
  };
}

/**
 * Serve the gateway over WebSocket.
 * @example
 * ```ts
 * const server = http.createServer(myApp);
 * attachWebSocket(gateway, { server, path: "/ws/gateway" });
 * server.listen(8787);
 * ```
 */
export function attachWebSocket(gateway: Gateway, options: WebSocketOptions = {}): WebSocketTransport {
  const path = options.path ?? "/ws/gateway";
  const maxPayload = options.maxPayload ?? Math.max(gateway.options.maxFrameBytes, LIMITS.mediaChunkBytes + 4096);
  const heartbeatMs = milliseconds("heartbeatMs", options.heartbeatMs, 30_000);
  const pongTimeoutMs = milliseconds("pongTimeoutMs", options.pongTimeoutMs, Math.min(10_000, heartbeatMs));
  const handshakeTimeoutMs = milliseconds("handshakeTimeoutMs", options.handshakeTimeoutMs, 10_000);
  const pacing = options.paceSockets ?? true;
  // Checked before anything starts. A socket is held at most as long as its upgrade may take.
  const paced =
    pacing === false ? undefined : pacingLimits({ maxHoldMs: handshakeTimeoutMs, ...(pacing === true ? {} : pacing) });
  const closeGraceMs = milliseconds("closeGraceMs", options.closeGraceMs, 1_000);
  const clientAddress = options.clientAddress ?? peerAddress;
  const hint = options.clientAddress
    ? undefined
    : proxyHint(gateway.options.maxConnectionsPerIp, (message) => gateway.options.logger.warn(message));
  const perMessageDeflate =
    options.perMessageDeflate === true ? { ...BOUNDED_DEFLATE } : (options.perMessageDeflate ?? false);
  const wss = new WebSocketServer({ noServer: true, maxPayload, perMessageDeflate });
  const heartbeat = startHeartbeat(wss, heartbeatMs, pongTimeoutMs);
  let closing = false;
  const gate = upgradeGate(options, handshakeTimeoutMs, () => closing);
  const queueing = options.queueUpgrades ?? true;
  const overCap = warnOnce(gateway.options.logger);
  const pacer = options.server && paced ? paceSockets(options.server, paced, overCap) : undefined;

  async function handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Node leaves an upgraded socket without an error listener; a reset during the gate must not crash the process.
    const onError = () => socket.destroy();
    socket.on("error", onError);
    // The socket keeps its place in the pacer's window until it is taken or refused: a storm then
    // waits unread in the kernel, not as parsed requests that outlive a young generation.
    const left = () => pacer?.handled(request.socket);
    const decision = await gate(request, socket);
    if (!decision || socket.destroyed) return left();
    const context: ConnectionContext = {
      remoteAddress: clientAddress(request),
      headers: request.headers,
      ...(decision.context ?? {}),
    };
    // Synchronous up to `gateway.accept`, as admitConnection's `take` must be.
    const upgrade = () =>
      wss.handleUpgrade(request, socket, head, (ws) => {
        socket.off("error", onError);
        const counted = hint?.opened(request, context.remoteAddress) ? hint : undefined;
        serve(gateway, heartbeat, ws, socket, context, counted);
      });
    if (queueing) return waitForRoom(gateway, socket, context.remoteAddress, handshakeTimeoutMs, upgrade, left);
    left();
    upgrade();
  }

  /** An upgrade nobody else takes: the gate still comes first (401 before 404), then 404. */
  async function refuseUnknownPath(request: IncomingMessage, socket: Duplex): Promise<void> {
    socket.on("error", () => socket.destroy());
    if (await gate(request, socket)) refuse(socket, 404, "not found");
  }

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (pathOf(request) === path) return void handleUpgrade(request, socket, head);
    pacer?.handled(request.socket);
    // Nobody else takes upgrades on this server: an unanswered socket would stay open for good.
    if (options.server && options.server.listenerCount("upgrade") <= 1) void refuseUnknownPath(request, socket);
  };
  options.server?.on("upgrade", onUpgrade);

  return {
    wss,
    handleUpgrade: (request, socket, head) => void handleUpgrade(request, socket, head),
    async close() {
      closing = true;
      heartbeat.stop();
      pacer?.stop();
      options.server?.off("upgrade", onUpgrade);
      await closeClients(wss, closeGraceMs);
    },
  };
}

/** Closes every client with 1001 and the server; destroys the sockets still open after `graceMs`. */
async function closeClients(wss: WebSocketServer, graceMs: number): Promise<void> {
  for (const ws of wss.clients) ws.close(1001, "server shutting down");
  const closed = new Promise<void>((resolve) => wss.close(() => resolve()));
  const timer = setTimeout(() => {
    for (const ws of wss.clients) ws.terminate();
  }, graceMs);
  try {
    await closed;
  } finally {
    clearTimeout(timer);
  }
}

/** Options of {@link listenWebSocket}: {@link WebSocketOptions} without `server`, plus where to listen. */
export interface ListenOptions extends Omit<WebSocketOptions, "server"> {
  /** Port (default 8787; 0 picks a free one). */
  port?: number;
  /** Address (default 127.0.0.1). */
  host?: string;
}

/** A transport that owns its HTTP server. */
export interface ListeningTransport extends WebSocketTransport {
  /** The port actually bound. */
  readonly port: number;
  /** The `ws://` URL devices connect to. */
  readonly url: string;
}

/**
 * Serve the gateway on a port of its own, when there is no existing server to attach to. Other
 * HTTP requests are answered 404.
 * @example
 * ```ts
 * const ws = await listenWebSocket(gateway, { port: 8787 });
 * console.log(ws.url); // ws://127.0.0.1:8787/ws/gateway
 * ```
 */
export async function listenWebSocket(gateway: Gateway, options: ListenOptions = {}): Promise<ListeningTransport> {
  const handshakeMs = milliseconds("handshakeTimeoutMs", options.handshakeTimeoutMs, 10_000);
  const bounds = {
    headersTimeout: handshakeMs,
    requestTimeout: handshakeMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, handshakeMs / 2)),
  };
  const server = http.createServer(bounds, (_req, res) => {
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not found" }));
  });
  const transport = attachWebSocket(gateway, { ...options, server });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8787, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    ...transport,
    port,
    url: `ws://${host.includes(":") ? `[${host}]` : host}:${port}${options.path ?? "/ws/gateway"}`,
    async close() {
      await transport.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
