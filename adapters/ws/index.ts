/**
 * The WebSocket transport (package `ws`): turns each socket into a `Connection` for the gateway.
 * It attaches to your existing `http.Server` at a path, or takes upgrades you route to it.
 * @module
 */
import http, { type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { Connection, ConnectionContext, Gateway, UpgradeDecision } from "chat-gateway";
import { LIMITS } from "chat-gateway";
import { upgradeGuard, type UpgradeGuardOptions } from "./upgrade-guard.js";

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
  /** Path to accept upgrades on (default `/ws/gateway`); other paths are left to other listeners. */
  path?: string;
  /** Largest text or binary message in bytes (default: the gateway's `maxFrameBytes`, 1 MiB, plus chunk room for binary); larger closes with 1009. */
  maxPayload?: number;
  /** Ping interval in milliseconds (default 30,000); a socket that misses a whole interval is terminated. */
  heartbeatMs?: number;
  /**
   * Decide on each upgrade before it happens (login protection: `protection.authorizeUpgrade`).
   * A refusal answers the HTTP status with a JSON body and never upgrades.
   */
  authorizeUpgrade?: (request: IncomingMessage) => Promise<UpgradeDecision> | UpgradeDecision;
}

/** The attached transport. */
export interface WebSocketTransport {
  /** The `ws` server (no own port). */
  readonly wss: WebSocketServer;
  /** Route an upgrade to the gateway yourself (when you did not pass `server`). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Stop taking upgrades and close every socket with 1001. */
  close(): Promise<void>;
}

const STATUS_TEXT: Record<number, string> = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable" };

function refuse(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? http.STATUS_CODES[status] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function pathOf(request: IncomingMessage): string {
  const url = request.url ?? "/";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
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
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  const guard = upgradeGuard(options);
  const wss = new WebSocketServer({ noServer: true, maxPayload, perMessageDeflate: false });
  const alive = new WeakMap<WebSocket, boolean>();
  let closing = false;

  const heartbeat = setInterval(() => {
    for (const ws of wss.clients) {
      if (alive.get(ws) === false) {
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, heartbeatMs);
  heartbeat.unref();

  function serve(ws: WebSocket, request: IncomingMessage, context: ConnectionContext): void {
    alive.set(ws, true);
    ws.on("pong", () => alive.set(ws, true));
    const connection: Connection = {
      send: (text) => {
        if (ws.readyState === ws.OPEN) ws.send(text);
      },
      sendBinary: (data) => {
        if (ws.readyState === ws.OPEN) ws.send(data, { binary: true });
      },
      close: (code, reason) => {
        if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
      },
      get bufferedAmount() {
        return ws.bufferedAmount;
      },
      pause: () => ws.pause(),
      resume: () => ws.resume(),
      context,
    };
    const handle = gateway.accept(connection);
    ws.on("message", (data, isBinary) => {
      alive.set(ws, true);
      if (isBinary) {
        const bytes = Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data;
        handle.receiveBinary(bytes);
      } else {
        handle.receiveText(data.toString());
      }
    });
    ws.on("close", () => handle.closed());
    ws.on("error", () => handle.closed());
  }

  async function handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (closing) return refuse(socket, 503, "server shutting down");
    const refusal = guard?.(request);
    if (refusal) return refuse(socket, refusal.status, refusal.message);
    let decision: UpgradeDecision = { ok: true };
    if (options.authorizeUpgrade) {
      try {
        decision = await options.authorizeUpgrade(request);
      } catch {
        return refuse(socket, 500, "internal error");
      }
    }
    if (!decision.ok) return refuse(socket, decision.status, decision.message);
    const context: ConnectionContext = {
      remoteAddress: request.socket.remoteAddress,
      headers: request.headers,
      ...(decision.context ?? {}),
    };
    wss.handleUpgrade(request, socket, head, (ws) => serve(ws, request, context));
  }

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (pathOf(request) !== path) return;
    void handleUpgrade(request, socket, head);
  };
  options.server?.on("upgrade", onUpgrade);

  return {
    wss,
    handleUpgrade: (request, socket, head) => void handleUpgrade(request, socket, head),
    async close() {
      closing = true;
      clearInterval(heartbeat);
      options.server?.off("upgrade", onUpgrade);
      for (const ws of wss.clients) ws.close(1001, "server shutting down");
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
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
  const server = http.createServer((_req, res) => {
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
