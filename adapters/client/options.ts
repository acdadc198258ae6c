/**
 * What a client is configured with: its options, and the per-call options of requests and sends.
 * @module
 */
import type { ClientPayloads } from "chat-gateway/protocol";
import type { CursorStore } from "./cursor.js";
import type { OpenAsksStore } from "./open-asks.js";
import type { WebSocketConstructor } from "./socket.js";

/** Reconnect timing: `min(maxDelayMs, initialDelayMs * factor^attempt)`, less up to `jitter` of it at random. */
export interface ReconnectOptions {
  /** Milliseconds before the first retry (default 500). */
  initialDelayMs?: number;
  /** Longest wait between attempts, milliseconds (default 15,000). */
  maxDelayMs?: number;
  /** Growth per failed attempt (default 2). */
  factor?: number;
  /** Fraction of the delay taken away at random, 0 to 1 (default 0.5), so devices do not retry in step. */
  jitter?: number;
}

/** Options of {@link createGatewayClient}. */
export interface GatewayClientOptions {
  /** The gateway's WebSocket URL, e.g. `ws://127.0.0.1:8787/ws/gateway`. */
  url: string;
  /**
   * `hello.token`: a session or device token; a function is asked on every connect. Default `""`
   * (a browser's cookie session). Login protection checks the upgrade before any hello, so in Node
   * send the token in {@link GatewayClientOptions.headers} as `Authorization: Bearer <token>`
   * (docs/PROTOCOL.md §9.2); this option can then stay empty.
   */
  token?: string | (() => string | Promise<string>);
  /** This device's id. Default: kept in `localStorage` in a browser, random per client elsewhere. */
  deviceId?: string;
  /** `hello.device_name` (default `""`). */
  deviceName?: string;
  /** `caps.media` (default true). */
  media?: boolean;
  /** `caps.push`: "fcm", "ntfy", "webpush" or "none" (default "none"), or the name of another push sender the gateway has; the gateway refuses any other at hello and the client stops (docs/PROTOCOL.md §2.3). */
  push?: string;
  /** `hello.fcm_token`. */
  fcmToken?: string;
  /** `hello.ntfy_topic`. */
  ntfyTopic?: string;
  /** `caps.streaming` (default true); change it later with {@link GatewayClient.setStreaming}. */
  streaming?: boolean;
  /**
   * `caps.delta` (default true): streamed answers arrive as appends to the text held
   * (docs/PROTOCOL.md §12); the client applies them, so `message.update` events still carry the
   * whole text. An append that does not fit is dropped and reported as a `stream.gap` event.
   */
  delta?: boolean;
  /**
   * `caps.pickers` (default true): receive the picker frames and `picker.resolved` of
   * docs/PROTOCOL.md §11 and track the open asks. False: the gateway sends a `notification` for
   * each ask instead, and the person answers with slash commands.
   */
  pickers?: boolean;
  /**
   * Where the open asks live between page loads (a sync only replays frames after the cursor).
   * Default: `localStorage` in a browser (one key per URL and device), memory elsewhere.
   */
  openAsksStore?: OpenAsksStore;
  /** Where the sync cursor lives. Default: `localStorage` in a browser (one key per URL and device), memory elsewhere. */
  cursorStore?: CursorStore;
  /** Milliseconds a request waits for its response (default 15,000). */
  requestTimeoutMs?: number;
  /** Reconnect timing, or false to never reconnect. */
  reconnect?: ReconnectOptions | false;
  /**
   * Milliseconds between keep-alive pings (default 25,000; 0 disables). When two intervals in a
   * row hear nothing from the gateway (no pong, no other frame), the socket counts as dead: it is
   * given up at once and the client reconnects. A short interval (the web UI's is 1,000) notices a
   * lost network within about three of them.
   */
  pingIntervalMs?: number;
  /** HTTP headers of the upgrade request (Node only, e.g. `Authorization: Bearer …`); ignored by browsers. */
  headers?: Record<string, string>;
  /**
   * Asked after a connection failed before `hello.ok` (a browser cannot see an HTTP 401 on the
   * upgrade): resolve false when the credential is no longer valid, and the client stops with
   * `unauthorized` instead of retrying. The web UI checks `/api/auth/status` here.
   */
  checkAuth?: () => Promise<boolean>;
  /** Uploads sent at once; more wait their turn (default 4, the gateway's default per connection). */
  maxConcurrentUploads?: number;
  /** The WebSocket implementation. Default: `globalThis.WebSocket`, else the `ws` package. */
  WebSocket?: WebSocketConstructor;
}

/** Per-call options of a request. */
export interface RequestOptions {
  /** Milliseconds to wait for the response (default: the client's `requestTimeoutMs`). */
  timeoutMs?: number;
}

/** What {@link GatewayClient.sendMessage} sends; `client_msg_id` is generated when absent. */
export type SendInput = ClientPayloads["message.send"];

/** Options of {@link GatewayClient.sendMessage}. */
export interface SendOptions extends RequestOptions {
  /**
   * When the lane's turn is running (docs/PROTOCOL.md §14.4): wait in its queue (`queue`, the
   * default), stop it and run next (`interrupt`), or hand the text to it (`steer`, when the agent can).
   */
  whenBusy?: "queue" | "interrupt" | "steer";
}

/** The default of {@link GatewayClientOptions.requestTimeoutMs}, milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;

/** Transfers and the sync move more than one frame: they wait at least this long, milliseconds. */
export const MIN_BULK_TIMEOUT_MS = 60_000;
