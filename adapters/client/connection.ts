/**
 * The socket lifecycle of a client: open, say hello, keep alive with pings, and after a drop
 * reconnect with backoff and jitter until the credential is refused or the client is closed.
 * @module
 */
import type { EventEmitter } from "eventemitter3";
import { CLOSE_CODES, parseServerFrame } from "chat-gateway/protocol";
import { ClientError } from "./errors.js";
import type { ConnectionState, GatewayClientEvents, StateInfo } from "./events.js";
import type { HelloOkPayload } from "./frames.js";
import type { ServerFrame } from "chat-gateway/protocol";
import type { GatewayClientOptions } from "./options.js";
import type { WebSocketConstructor, WebSocketLike } from "./socket.js";
import { retryHint, watchRefusedUpgrade } from "./retry-hint.js";
import { helloFrame } from "./hello-payload.js";
import { DEFAULT_PING_INTERVAL_MS, keepAlive, type KeepAlive } from "./keep-alive.js";
import { finalClose, retryDelay, type Attempt } from "./reconnect-policy.js";

/** `WebSocket.OPEN`: the constant is not on every implementation's constructor. */
export const OPEN = 1;

/** What the connection hands back to the client that owns it. */
export interface ConnectionHooks {
  /** Where state changes, `hello.ok`, `synced` and `unauthorized` are emitted. */
  readonly events: EventEmitter<GatewayClientEvents>;
  /** A text frame other than the first `hello.ok` of a socket. */
  onFrame(frame: ServerFrame): void;
  /** A binary message (a media chunk). */
  onBinary(bytes: Uint8Array): void;
  /** `hello.ok` arrived on `ws`: catch up, then call {@link Connection.markSynced}. */
  onHello(ws: WebSocketLike, hello: HelloOkPayload): void;
  /** The socket is gone (`forGood` once the client stopped): fail what waits for a response. */
  onClosed(error: ClientError, forGood: boolean): void;
  /** Send a keep-alive ping; it rejects with `timeout` when no pong came. */
  ping(timeoutMs: number): Promise<unknown>;
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: ClientError): void;
}

/** One client's socket, replaced on every reconnect; the client sees only its frames and states. */
export class Connection {
  readonly #options: GatewayClientOptions;
  readonly #hooks: ConnectionHooks;
  readonly #deviceId: string;
  #streaming: boolean;
  #ws: WebSocketLike | undefined;
  #state: ConnectionState = "closed";
  #started = false;
  #stopped = false;
  #attempt = 0;
  #retryAtOnce = false;
  /** The last close was 1012: the next attempt waits only a jitter. */
  #restartJitter = false;
  /** The last close was 1013, or the upgrade's 503, with a retry hint (ms): the next attempt waits that, plus a jitter. */
  #retryAfter: number | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #keepAlive: KeepAlive | undefined;
  /** What the current socket learnt so far, for a close this side decides (see {@link Connection.networkLost}). */
  #wsAttempt: Attempt | undefined;
  #hello: HelloOkPayload | undefined;
  #helloWaiters: Array<Waiter<HelloOkPayload>> = [];
  #readyWaiters: Array<Waiter<void>> = [];

  /** Idle until {@link connect}. */
  constructor(options: GatewayClientOptions, deviceId: string, hooks: ConnectionHooks) {
    this.#options = options;
    this.#deviceId = deviceId;
    this.#hooks = hooks;
    this.#streaming = options.streaming ?? true;
  }

  /** Where the connection is. */
  get state(): ConnectionState {
    return this.#state;
  }
  /** The latest `hello.ok`. */
  get helloOk(): HelloOkPayload | undefined {
    return this.#hello;
  }
  /** `hello.device_id`. */
  get deviceId(): string {
    return this.#deviceId;
  }
  /** `caps.streaming` of the next hello. */
  get streaming(): boolean {
    return this.#streaming;
  }
  /** The current socket; undefined between attempts and after the stop. */
  get socket(): WebSocketLike | undefined {
    return this.#ws;
  }

  /** Start the first attempt (once); resolves with the next `hello.ok`. */
  connect(): Promise<HelloOkPayload> {
    if (this.#stopped) return Promise.reject(this.#closedError());
    if (this.#hello && (this.#state === "open" || this.#state === "syncing")) return Promise.resolve(this.#hello);
    const promise = new Promise<HelloOkPayload>((resolve, reject) => this.#helloWaiters.push({ resolve, reject }));
    if (!this.#started) {
      this.#started = true;
      this.#setState("connecting", {});
      void this.#open();
    }
    return promise;
  }

  /** Resolves once open (said hello and synced). */
  ready(): Promise<void> {
    if (this.#state === "open") return Promise.resolve();
    if (this.#stopped) return Promise.reject(this.#closedError());
    return new Promise((resolve, reject) => this.#readyWaiters.push({ resolve, reject }));
  }

  /** Change `caps.streaming`: the caps travel in hello, so the socket is replaced at once. */
  async setStreaming(on: boolean): Promise<HelloOkPayload> {
    this.#streaming = on;
    if (!this.#started || this.#stopped) return this.connect();
    const next = new Promise<HelloOkPayload>((resolve, reject) => this.#helloWaiters.push({ resolve, reject }));
    if (this.#ws) {
      this.#retryAtOnce = true;
      this.#ws.close(1000, "caps changed");
    } else {
      this.reconnectNow();
    }
    return next;
  }

  /** The network or the app came back: see `GatewayClient.reconnectNow`. */
  reconnectNow(): void {
    if (this.#stopped) return;
    this.#attempt = 0;
    if (this.#state === "reconnecting") {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
      // An attempt made while the network was gone may hang unanswered: the new one replaces it.
      const hung = this.#ws;
      this.#ws = undefined;
      this.#wsAttempt = undefined;
      if (hung) closeQuietly(hung, DROPPED_CLOSE_CODE, "replaced");
      void this.#open();
      return;
    }
    this.#keepAlive?.probe();
  }

  /** The network is gone: see `GatewayClient.networkLost`. */
  networkLost(): void {
    if (this.#ws) this.#drop(this.#ws, "the network is offline");
  }

  /**
   * Give up on `ws` now: its close is handled as if it had come, and its real close event, which a
   * dead network may hold back for a minute, is ignored when it comes.
   */
  #drop(ws: WebSocketLike, reason: string): void {
    if (this.#ws !== ws || !this.#wsAttempt) return;
    this.#onClose(ws, this.#wsAttempt, { code: DROPPED_CLOSE_CODE, reason });
    closeQuietly(ws, DROPPED_CLOSE_CODE, reason);
  }

  /** Resolves once a socket said hello; starts connecting when nobody did yet. */
  async waitReady(timeoutMs: number): Promise<void> {
    if (this.#stopped) throw this.#closedError();
    if (this.#ws && this.#ws.readyState === OPEN && (this.#state === "open" || this.#state === "syncing")) return;
    if (!this.#started) void this.connect().catch(() => undefined);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waiter = new Promise<void>((resolve, reject) => {
      // Requests may go out during the sync: the gateway handles them after it, in order.
      this.#helloWaiters.push({ resolve: () => resolve(), reject });
      timer = setTimeout(() => {
        this.#helloWaiters = this.#helloWaiters.filter((w) => w.reject !== reject);
        reject(new ClientError("timeout", `not connected within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      await waiter;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The sync after `hello.ok` ended: the connection is open. */
  markSynced(cursor: number): void {
    this.#setState("open", {});
    this.#hooks.events.emit("synced", cursor);
    for (const waiter of this.#readyWaiters.splice(0)) waiter.resolve();
  }

  /** Stop for good: close the socket, cancel the retry, reject everyone waiting. */
  stop(state: "closed" | "unauthorized", reason: string): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    this.#stopPing();
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws && ws.readyState <= OPEN) ws.close(1000, "client closed");
    const error = new ClientError(state === "unauthorized" ? "auth" : "closed", reason);
    this.#hooks.onClosed(error, true);
    for (const waiter of this.#helloWaiters.splice(0)) waiter.reject(error);
    for (const waiter of this.#readyWaiters.splice(0)) waiter.reject(error);
    this.#setState(state, { reason });
    if (state === "unauthorized") this.#hooks.events.emit("unauthorized", reason);
  }

  #closedError(): ClientError {
    return new ClientError("closed", `the client is ${this.#state}`);
  }

  #setState(state: ConnectionState, info: StateInfo): void {
    this.#state = state;
    this.#hooks.events.emit("state", state, info);
  }

  async #socketClass(): Promise<WebSocketConstructor> {
    if (this.#options.WebSocket) return this.#options.WebSocket;
    const native = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (native && !this.#options.headers) return native;
    const mod = (await import("ws")) as unknown as { default?: WebSocketConstructor; WebSocket?: WebSocketConstructor };
    return (mod.WebSocket ?? mod.default) as WebSocketConstructor;
  }

  async #open(): Promise<void> {
    if (this.#stopped) return;
    let ws: WebSocketLike;
    let token: string;
    try {
      const Socket = await this.#socketClass();
      const t = this.#options.token;
      token = typeof t === "function" ? await t() : (t ?? "");
      if (this.#stopped) return;
      ws = this.#options.headers
        ? new Socket(this.#options.url, undefined, { headers: this.#options.headers })
        : new Socket(this.#options.url);
    } catch (error) {
      this.#scheduleRetry(error instanceof Error ? error.message : String(error), false);
      return;
    }
    this.#ws = ws;
    ws.binaryType = "arraybuffer";
    const attempt: Attempt = {
      gotHello: false,
      httpStatus: undefined,
      helloRefusal: undefined,
      sentAuthorization: Object.keys(this.#options.headers ?? {}).some(
        (name) => name.toLowerCase() === "authorization",
      ),
    };
    this.#wsAttempt = attempt;
    ws.onopen = () => ws.send(helloFrame(this.#options, this.#deviceId, this.#streaming, token));
    ws.onerror = (event) => {
      // The ws package reports a refused upgrade as "Unexpected server response: 401".
      const message = (event as { message?: unknown })?.message;
      const match = typeof message === "string" ? /server response: (\d{3})/.exec(message) : null;
      if (match) attempt.httpStatus ??= Number(match[1]);
    };
    watchRefusedUpgrade(ws, (status, hint) => {
      attempt.httpStatus = status;
      attempt.upgradeHint = hint;
    });
    ws.onmessage = (event) => this.#onMessage(ws, attempt, event.data);
    ws.onclose = (event) => this.#onClose(ws, attempt, event);
  }

  #onMessage(ws: WebSocketLike, attempt: Attempt, data: unknown): void {
    if (this.#ws !== ws) return;
    this.#keepAlive?.heard();
    if (typeof data === "string") {
      let frame: ServerFrame | undefined;
      try {
        frame = parseServerFrame(data);
      } catch (error) {
        // A malformed frame must not reach code that trusts its shape (and throw out of the socket's handler).
        this.#hooks.events.emit(
          "frame.invalid",
          new ClientError("unsupported", `dropped a malformed gateway frame: ${(error as Error).message}`),
        );
        return;
      }
      // A frame type this version does not know: a newer gateway's, to ignore.
      if (frame === undefined) return;
      if (frame.type === "error" && frame.id === "hello" && !attempt.gotHello)
        attempt.helloRefusal = (frame.payload as { message?: string }).message;
      if (frame.type === "hello.ok" && !attempt.gotHello) {
        attempt.gotHello = true;
        this.#onHelloOk(frame as ServerFrame<"hello.ok">);
        return;
      }
      this.#hooks.onFrame(frame);
    } else if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
      const bytes =
        data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      this.#hooks.onBinary(bytes);
    }
  }

  #onHelloOk(frame: ServerFrame<"hello.ok">): void {
    const ws = this.#ws!;
    this.#hello = frame.payload;
    this.#attempt = 0;
    this.#setState("syncing", {});
    this.#hooks.events.emit("frame", frame);
    this.#hooks.events.emit("hello.ok", frame.payload, frame);
    for (const waiter of this.#helloWaiters.splice(0)) waiter.resolve(frame.payload);
    this.#startPing();
    this.#hooks.onHello(ws, frame.payload);
  }

  #onClose(ws: WebSocketLike, attempt: Attempt, event: { code: number; reason: string }): void {
    if (this.#ws !== ws) return;
    this.#ws = undefined;
    this.#wsAttempt = undefined;
    this.#stopPing();
    this.#hooks.onClosed(
      new ClientError("disconnected", `the connection closed (${event.code}) before the response`),
      false,
    );
    if (this.#stopped) return;
    const final = finalClose(event, attempt);
    if (final) {
      this.stop(final.state, final.reason);
      return;
    }
    // 1012: the server drained and restarts (docs/PROTOCOL.md §18); another process may take us now.
    if (event.code === CLOSE_CODES.serviceRestart) this.#restartJitter = true;
    // 1013 or an upgrade's 503 with a hint: shed as too busy (docs/PROTOCOL.md §18.5), not refused for the credential.
    this.#retryAfter = attempt.upgradeHint ?? retryHint(event.code, event.reason);
    const why =
      attempt.httpStatus === undefined
        ? `closed with ${event.code}${event.reason ? ` (${event.reason})` : ""}`
        : `the server answered ${attempt.httpStatus} to the upgrade${attempt.upgradeHint === undefined ? "" : ` (retry_after_ms=${attempt.upgradeHint})`}`;
    this.#scheduleRetry(why, !attempt.gotHello && this.#retryAfter === undefined);
  }

  #scheduleRetry(reason: string, beforeHello: boolean): void {
    const reconnect = this.#options.reconnect;
    if (reconnect === false) {
      this.stop("closed", reason);
      return;
    }
    const retry = () => {
      const delay = retryDelay(reconnect, this.#attempt, {
        atOnce: this.#retryAtOnce,
        hint: this.#retryAfter,
        restart: this.#restartJitter,
      });
      this.#retryAtOnce = false;
      this.#restartJitter = false;
      this.#retryAfter = undefined;
      this.#attempt++;
      this.#setState("reconnecting", { retryInMs: delay, attempt: this.#attempt, reason });
      this.#retryTimer = setTimeout(() => {
        this.#retryTimer = undefined;
        void this.#open();
      }, delay);
    };
    const check = this.#options.checkAuth;
    if (beforeHello && check) {
      check().then(
        (ok) =>
          this.#stopped ? undefined : ok ? retry() : this.stop("unauthorized", "the login session is no longer valid"),
        () => (this.#stopped ? undefined : retry()),
      );
      return;
    }
    retry();
  }

  #startPing(): void {
    this.#stopPing();
    const every = this.#options.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    const ws = this.#ws;
    if (every <= 0 || !ws) return;
    this.#keepAlive = keepAlive(every, this.#hooks.ping, () => this.#drop(ws, "no pong"));
  }

  #stopPing(): void {
    this.#keepAlive?.stop();
    this.#keepAlive = undefined;
  }
}
/** The close code of a socket this side gave up on (no pong, or the network went offline). */
const DROPPED_CLOSE_CODE = 4000;

/** Close a socket given up on; one still connecting may throw, and is abandoned either way. */
function closeQuietly(ws: WebSocketLike, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Nothing more to do with it.
  }
}
