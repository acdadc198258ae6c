/**
 * The gateway client: one WebSocket, hello, typed events, requests as promises, reconnect with
 * backoff and jitter, sync from a persisted cursor, media transfers and the history pager.
 * @module
 */
import { EventEmitter } from "eventemitter3";
import type { ChatId, ClientPayloads, HistoryItem, MediaKind, MediaRef, MessageId } from "chat-gateway";
import { hasLocalStorage, localStorageCursorStore, memoryCursorStore, type CursorStore } from "./cursor.js";
import { ClientError } from "./errors.js";
import type {
  HelloOkPayload,
  MessagePayload,
  RequestPayload,
  RequestType,
  ResponsePayload,
  ServerFrame,
  ServerFrameType,
  ServerPayloads,
} from "./frames.js";
import { CHUNK_BYTES, decodeMediaChunk, encodeMediaChunk, kindOf, randomId, sha256Hex } from "./media.js";

/**
 * Where the connection is:
 * `connecting` (first attempt), `syncing` (hello done, catching up with `sync`), `open`,
 * `reconnecting` (waiting for the next attempt), `unauthorized` (the gateway or the HTTP gate
 * refused the credential; no more attempts), `closed` (by {@link GatewayClient.close}).
 */
export type ConnectionState = "connecting" | "syncing" | "open" | "reconnecting" | "unauthorized" | "closed";

/** Details that come with a `state` event. */
export interface StateInfo {
  /** For `reconnecting`: milliseconds until the next attempt. */
  retryInMs?: number;
  /** Failed attempts in a row. */
  attempt?: number;
  /** For `unauthorized` and `closed`: why. */
  reason?: string;
}

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

/** The part of the WebSocket API the client uses (the browser's, or the `ws` package's). */
export interface WebSocketLike {
  readonly readyState: number;
  readonly bufferedAmount: number;
  binaryType: string;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor: `new WebSocket(url)`, plus an options argument for `ws` (headers). */
export type WebSocketConstructor = new (url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) => WebSocketLike;

/** Options of {@link createGatewayClient}. */
export interface GatewayClientOptions {
  /** The gateway's WebSocket URL, e.g. `ws://127.0.0.1:8787/ws/gateway`. */
  url: string;
  /** `hello.token`: a session or device token; a function is asked on every connect. Default `""` (a browser's cookie session). */
  token?: string | (() => string | Promise<string>);
  /** This device's id. Default: kept in `localStorage` in a browser, random per client elsewhere. */
  deviceId?: string;
  /** `hello.device_name` (default `""`). */
  deviceName?: string;
  /** `caps.media` (default true). */
  media?: boolean;
  /** `caps.push`: "fcm", "ntfy" or "none" (default "none"). */
  push?: string;
  /** `hello.fcm_token`. */
  fcmToken?: string;
  /** `hello.ntfy_topic`. */
  ntfyTopic?: string;
  /** `caps.streaming` (default true); change it later with {@link GatewayClient.setStreaming}. */
  streaming?: boolean;
  /** Where the sync cursor lives. Default: `localStorage` in a browser (one key per URL and device), memory elsewhere. */
  cursorStore?: CursorStore;
  /** Milliseconds a request waits for its response (default 15,000). */
  requestTimeoutMs?: number;
  /** Reconnect timing, or false to never reconnect. */
  reconnect?: ReconnectOptions | false;
  /** Milliseconds between keep-alive pings; a ping without pong drops the socket and reconnects (default 25,000; 0 disables). */
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

/**
 * Every event of the client: one per gateway frame type (payload, whole frame), plus the client's
 * own. Responses are emitted too (a `history` response is also a `history` event), and a stored
 * frame (one with `seq`) is emitted once even when a sync replays it again.
 */
export type GatewayClientEvents = {
  [K in ServerFrameType]: (payload: ServerPayloads[K], frame: ServerFrame<K>) => void;
} & {
  /** The connection state changed. */
  state: (state: ConnectionState, info: StateInfo) => void;
  /** Every frame, before its own event (duplicates of already seen stored frames are dropped before this). */
  frame: (frame: ServerFrame) => void;
  /** A sync ended (after every connect); the cursor is up to date. */
  synced: (cursor: number) => void;
  /** The gateway no longer has the frames after this device's cursor: refetch history and channels. */
  reset: (cursor: number) => void;
  /** The credential was refused (close 4401, HTTP 401, or `checkAuth` said so); the client stopped. */
  unauthorized: (reason: string) => void;
};

/** Per-call options of a request. */
export interface RequestOptions {
  /** Milliseconds to wait for the response (default: the client's `requestTimeoutMs`). */
  timeoutMs?: number;
}

/** What {@link GatewayClient.upload} needs besides the bytes. */
export interface UploadOptions extends RequestOptions {
  /** MIME type (default from a Blob's type, else `application/octet-stream`). */
  mime?: string;
  /** Protocol media kind (default from the MIME type). */
  kind?: MediaKind;
  /** File name (default from a File's name, else "file"). */
  filename?: string;
  /** Called as chunks leave: bytes sent so far and the total. */
  onProgress?: (sent: number, total: number) => void;
}

/** A finished download. */
export interface Download {
  media_id: string;
  bytes: Uint8Array;
  /** Hex sha256 of `bytes`, computed with WebCrypto. */
  sha256: string;
}

/** What {@link GatewayClient.sendMessage} sends; `client_msg_id` is generated when absent. */
export type SendInput = ClientPayloads["message.send"];

/** A lane to page through: a channel, and a thread of it or null for the flat lane. */
export interface LaneQuery {
  chat_id: ChatId;
  thread_id?: ChatId | null;
}

interface Pending {
  type: string;
  resolve(frame: ServerFrame): void;
  reject(error: ClientError): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface ActiveDownload {
  chunks: Uint8Array[];
  received: number;
  onProgress?: (received: number) => void;
}

const OPEN = 1;
const SEEN_WINDOW = 4096;

/** Pages backwards through a lane's history with `before_message_id` (docs/PROTOCOL.md §5). */
export class HistoryPager {
  readonly #client: GatewayClient;
  readonly #lane: LaneQuery;
  readonly #limit: number | undefined;
  #oldest: MessageId | null = null;
  #hasMore = true;

  /** Use {@link GatewayClient.historyPager}. */
  constructor(client: GatewayClient, lane: LaneQuery, limit?: number) {
    this.#client = client;
    this.#lane = lane;
    this.#limit = limit;
  }

  /** False once the oldest page was read. */
  get hasMore(): boolean {
    return this.#hasMore;
  }

  /** The oldest message id read so far. */
  get oldestMessageId(): MessageId | null {
    return this.#oldest;
  }

  /** The next older page, oldest first; empty once there is nothing more. */
  async next(options?: RequestOptions): Promise<HistoryItem[]> {
    if (!this.#hasMore) return [];
    const page = await this.#client.request(
      "history",
      {
        chat_id: this.#lane.chat_id,
        thread_id: this.#lane.thread_id ?? null,
        ...(this.#oldest ? { before_message_id: this.#oldest } : {}),
        ...(this.#limit ? { limit: this.#limit } : {}),
      },
      options,
    );
    this.#hasMore = page.has_more && page.oldest_message_id !== null;
    if (page.oldest_message_id) this.#oldest = page.oldest_message_id;
    return page.messages;
  }

  /** Every page, newest first, until the start of the lane. */
  async *[Symbol.asyncIterator](): AsyncGenerator<HistoryItem[]> {
    while (this.#hasMore) {
      const page = await this.next();
      if (page.length > 0) yield page;
    }
  }
}

/**
 * A connection to a gateway that stays up: it says hello, syncs from its cursor, and after any
 * drop reconnects with backoff and syncs again. Frames arrive as typed events; requests are
 * promises. Create it with {@link createGatewayClient}.
 */
export class GatewayClient extends EventEmitter<GatewayClientEvents> {
  readonly #options: GatewayClientOptions;
  readonly #deviceId: string;
  readonly #cursorStore: CursorStore;
  #streaming: boolean;
  #ws: WebSocketLike | undefined;
  #state: ConnectionState = "closed";
  #started = false;
  #stopped = false;
  #attempt = 0;
  #retryAtOnce = false;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  #hello: HelloOkPayload | undefined;
  #cursor: number | undefined;
  #syncBase = -1;
  #seen = new Set<number>();
  #seenOrder: number[] = [];
  #nextId = 0;
  readonly #pending = new Map<string, Pending>();
  readonly #downloads = new Map<string, ActiveDownload>();
  #readyWaiters: Array<{ resolve(): void; reject(error: ClientError): void }> = [];
  #uploading = 0;
  #uploadQueue: Array<() => void> = [];
  #helloWaiters: Array<{ resolve(hello: HelloOkPayload): void; reject(error: ClientError): void }> = [];

  /** Use {@link createGatewayClient}. */
  constructor(options: GatewayClientOptions) {
    super();
    if (!options.url) throw new TypeError("createGatewayClient: url is required");
    this.#options = options;
    this.#deviceId = options.deviceId ?? defaultDeviceId();
    this.#streaming = options.streaming ?? true;
    this.#cursorStore =
      options.cursorStore ?? (hasLocalStorage() ? localStorageCursorStore(`chat-gateway:cursor:${options.url}:${this.#deviceId}`) : memoryCursorStore());
  }

  /** The connection state. */
  get state(): ConnectionState {
    return this.#state;
  }
  /** The latest `hello.ok` (limits, user, the gateway's streaming setting). */
  get helloOk(): HelloOkPayload | undefined {
    return this.#hello;
  }
  /** The signed-in user, once connected (null when login protection is off). */
  get user(): string | null | undefined {
    return this.#hello?.user;
  }
  /** The newest `seq` seen. */
  get cursor(): number | undefined {
    return this.#cursor;
  }
  /** This device's id. */
  get deviceId(): string {
    return this.#deviceId;
  }
  /** Whether this device asks for streamed answers (`caps.streaming`). */
  get streaming(): boolean {
    return this.#streaming;
  }

  /**
   * Start connecting (and reconnecting); resolves with the first `hello.ok`. Rejects with
   * `auth` when the credential is refused, or `closed` when {@link close} is called first.
   * Calling it again after a successful start resolves with the latest `hello.ok`.
   */
  connect(): Promise<HelloOkPayload> {
    if (this.#stopped) return Promise.reject(new ClientError("closed", `the client is ${this.#state}`));
    if (this.#hello && (this.#state === "open" || this.#state === "syncing")) return Promise.resolve(this.#hello);
    const promise = new Promise<HelloOkPayload>((resolve, reject) => this.#helloWaiters.push({ resolve, reject }));
    if (!this.#started) {
      this.#started = true;
      this.#setState("connecting", {});
      void this.#open();
    }
    return promise;
  }

  /** Resolves once the socket is open and the sync has finished. */
  ready(): Promise<void> {
    if (this.#state === "open") return Promise.resolve();
    if (this.#stopped) return Promise.reject(new ClientError("closed", `the client is ${this.#state}`));
    return new Promise((resolve, reject) => this.#readyWaiters.push({ resolve, reject }));
  }

  /** Close the socket and stop reconnecting. Pending requests reject with `closed`. */
  close(): void {
    this.#stop("closed", "closed by the client");
  }

  /**
   * Turn streamed answers on or off for this device (`caps.streaming`). Caps travel in `hello`,
   * so an open connection is re-established; resolves with the new `hello.ok`.
   */
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

  /** Skip the backoff wait and try now (e.g. when the browser comes back online). */
  reconnectNow(): void {
    if (this.#stopped || this.#state !== "reconnecting") return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    void this.#open();
  }

  /**
   * Send a request and resolve with its response's payload. Waits for the connection when it is
   * down (counting against the timeout). Rejects with a {@link ClientError}: the gateway's code
   * from an `error` frame with this id, `timeout`, `disconnected` (the socket dropped first; the
   * request may or may not have been handled) or `closed`.
   */
  async request<T extends RequestType>(type: T, payload: RequestPayload<T>, options: RequestOptions = {}): Promise<ResponsePayload<T>> {
    const frame = await this.#call(type, payload as Record<string, unknown>, options.timeoutMs ?? this.#timeout());
    return frame.payload as ResponsePayload<T>;
  }

  /** The whole response frame of a request (with `seq` when the response is stored). */
  requestFrame<T extends RequestType>(type: T, payload: RequestPayload<T>, options: RequestOptions = {}): Promise<ServerFrame> {
    return this.#call(type, payload as Record<string, unknown>, options.timeoutMs ?? this.#timeout());
  }

  /**
   * Send a message and resolve with its echo. A `client_msg_id` is added when absent, and a
   * send cut off by a dropped connection is retried with it until the timeout, so the message is
   * stored once (the gateway recognises the retry).
   */
  async sendMessage(input: SendInput, options: RequestOptions = {}): Promise<MessagePayload> {
    const payload = { ...input, client_msg_id: input.client_msg_id ?? randomId("cm") };
    const deadline = Date.now() + (options.timeoutMs ?? this.#timeout());
    for (;;) {
      try {
        return await this.request("message.send", payload, { timeoutMs: Math.max(1, deadline - Date.now()) });
      } catch (error) {
        if (!(error instanceof ClientError) || error.code !== "disconnected" || Date.now() >= deadline) throw error;
      }
    }
  }

  /** Update this device's push target (`fcm.register`); the gateway sends no response. */
  async registerPush(target: ClientPayloads["fcm.register"], options: RequestOptions = {}): Promise<void> {
    await this.#waitReady(options.timeoutMs ?? this.#timeout());
    this.#ws?.send(JSON.stringify({ type: "fcm.register", payload: target }));
  }

  /** A pager that walks a lane's history backwards, newest page first. */
  historyPager(lane: LaneQuery, options: { limit?: number } = {}): HistoryPager {
    return new HistoryPager(this, lane, options.limit);
  }

  /**
   * Upload media: `media.upload.start`, 256 KiB chunks, `media.upload.end` with the sha256
   * computed here. Resolves with the media reference to put in `message.send`'s `media_refs`
   * (its `media_id`), for one message: the gateway refuses a second message with the same ref
   * (`unsupported`), so upload again to send the file again. Rejects with the gateway's code (`media_too_large`, `rate_limited`, …) or
   * `upload_failed` when the gateway's check of size and sha256 failed.
   */
  async upload(data: Blob | ArrayBuffer | ArrayBufferView, options: UploadOptions = {}): Promise<MediaRef> {
    // The gateway refuses more uploads in flight per connection than its limit (rate_limited).
    const max = Math.max(1, this.#options.maxConcurrentUploads ?? 4);
    if (this.#uploading >= max) await new Promise<void>((resolve) => this.#uploadQueue.push(resolve));
    this.#uploading++;
    try {
      return await this.#upload(data, options);
    } finally {
      this.#uploading--;
      this.#uploadQueue.shift()?.();
    }
  }

  async #upload(data: Blob | ArrayBuffer | ArrayBufferView, options: UploadOptions): Promise<MediaRef> {
    const bytes = await toBytes(data);
    const blob = typeof Blob !== "undefined" && data instanceof Blob ? data : undefined;
    const mime = options.mime || blob?.type || "application/octet-stream";
    const filename = options.filename ?? ((blob as { name?: string } | undefined)?.name || "file");
    const kind = options.kind ?? kindOf(mime);
    const sha256 = await sha256Hex(bytes);
    const timeoutMs = options.timeoutMs ?? Math.max(this.#timeout(), 60_000);
    await this.#waitReady(timeoutMs);
    const limit = this.#hello?.limits.max_media_bytes;
    if (limit !== undefined && bytes.byteLength > limit) {
      throw new ClientError("media_too_large", `${filename} is ${bytes.byteLength} bytes; the gateway takes at most ${limit}`, "media.upload.start");
    }
    const mediaRef = randomId("u");
    const ws = this.#ws!;
    // media.upload.start has no success response; only an error carries its id.
    const startId = this.#newId();
    let failure: ClientError | undefined;
    const started = this.#track(startId, "media.upload.start", undefined);
    started.catch((error: ClientError) => void (failure = error));
    ws.send(JSON.stringify({ type: "media.upload.start", id: startId, payload: { media_ref: mediaRef, kind, mime, size: bytes.byteLength, filename } }));
    try {
      let offset = 0;
      options.onProgress?.(0, bytes.byteLength);
      while (offset < bytes.byteLength) {
        if (failure) throw failure;
        if (this.#ws !== ws) throw new ClientError("disconnected", "the connection dropped during the upload", "media.upload.start");
        const piece = bytes.subarray(offset, Math.min(bytes.byteLength, offset + CHUNK_BYTES));
        ws.send(encodeMediaChunk(mediaRef, offset, piece));
        offset += piece.byteLength;
        await this.#drain(ws);
        options.onProgress?.(offset, bytes.byteLength);
      }
      if (failure) throw failure;
      let ack;
      try {
        ack = await this.request("media.upload.end", { media_ref: mediaRef, sha256 }, { timeoutMs });
      } catch (error) {
        // A refused start makes the end fail too ("no upload in flight"): report the cause.
        throw failure ?? error;
      }
      if (failure) throw failure;
      if (!ack.ok) throw new ClientError("upload_failed", `the gateway refused upload ${mediaRef}: size or sha256 did not match`, "media.upload.end");
      return { media_id: ack.media_ref, kind, mime, size: bytes.byteLength, filename };
    } finally {
      this.#settle(startId);
    }
  }

  /** Download media with `media.pull`; resolves with the bytes and their sha256. */
  async download(mediaId: string, options: RequestOptions & { onProgress?: (received: number) => void } = {}): Promise<Download> {
    const active: ActiveDownload = { chunks: [], received: 0, onProgress: options.onProgress };
    if (this.#downloads.has(mediaId)) throw new ClientError("unsupported", `media ${mediaId} is already being downloaded`, "media.pull");
    this.#downloads.set(mediaId, active);
    try {
      const end = await this.request("media.pull", { media_id: mediaId }, { timeoutMs: options.timeoutMs ?? Math.max(this.#timeout(), 60_000) });
      if (!end.ok) throw new ClientError("download_failed", `the gateway could not read media ${mediaId}`, "media.pull");
      const bytes = new Uint8Array(active.received);
      let at = 0;
      for (const chunk of active.chunks) {
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      return { media_id: mediaId, bytes, sha256: await sha256Hex(bytes) };
    } finally {
      this.#downloads.delete(mediaId);
    }
  }

  // ---- connection ----

  #timeout(): number {
    return this.#options.requestTimeoutMs ?? 15_000;
  }

  #setState(state: ConnectionState, info: StateInfo): void {
    this.#state = state;
    this.emit("state", state, info);
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
      ws = this.#options.headers ? new Socket(this.#options.url, undefined, { headers: this.#options.headers }) : new Socket(this.#options.url);
    } catch (error) {
      this.#scheduleRetry(error instanceof Error ? error.message : String(error), false);
      return;
    }
    this.#ws = ws;
    ws.binaryType = "arraybuffer";
    let gotHello = false;
    let httpStatus: number | undefined;
    let helloRefusal: string | undefined;
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "hello",
          id: "hello",
          payload: {
            token,
            device_id: this.#deviceId,
            device_name: this.#options.deviceName ?? "",
            caps: { min_protocol: 1, media: this.#options.media ?? true, push: this.#options.push ?? "none", streaming: this.#streaming },
            ...(this.#options.fcmToken ? { fcm_token: this.#options.fcmToken } : {}),
            ...(this.#options.ntfyTopic ? { ntfy_topic: this.#options.ntfyTopic } : {}),
          },
        }),
      );
    };
    ws.onerror = (event) => {
      // The ws package reports a refused upgrade as "Unexpected server response: 401".
      const message = (event as { message?: unknown })?.message;
      const match = typeof message === "string" ? /server response: (\d{3})/.exec(message) : null;
      if (match) httpStatus = Number(match[1]);
    };
    ws.onmessage = (event) => {
      if (this.#ws !== ws) return;
      const data = event.data;
      if (typeof data === "string") {
        let frame: ServerFrame;
        try {
          frame = JSON.parse(data) as ServerFrame;
        } catch {
          return;
        }
        if (frame.type === "error" && frame.id === "hello" && !gotHello) helloRefusal = (frame.payload as { message?: string }).message;
        if (frame.type === "hello.ok" && !gotHello) {
          gotHello = true;
          void this.#onHello(frame as ServerFrame<"hello.ok">);
          return;
        }
        this.#onFrame(frame);
      } else if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
        const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        this.#onBinary(bytes);
      }
    };
    ws.onclose = (event) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      this.#stopPing();
      this.#failPending(new ClientError("disconnected", `the connection closed (${event.code}) before the response`));
      this.#syncBase = -1;
      if (this.#stopped) return;
      if (event.code === 4401 || httpStatus === 401) {
        this.#stop("unauthorized", event.code === 4401 ? "the gateway refused the credential" : "the server answered 401 to the upgrade");
        return;
      }
      if (event.code === 4426) {
        this.#stop("closed", "the gateway speaks an older protocol than this client needs");
        return;
      }
      // 1008 after an error to hello: a field of the hello (a push target) is invalid, so the same hello would fail again.
      if (event.code === 1008 && !gotHello) {
        this.#stop("closed", `the gateway refused the hello: ${helloRefusal ?? (event.reason || "invalid hello")}`);
        return;
      }
      this.#scheduleRetry(`closed with ${event.code}${event.reason ? ` (${event.reason})` : ""}`, !gotHello);
    };
  }

  async #onHello(frame: ServerFrame<"hello.ok">): Promise<void> {
    const ws = this.#ws;
    this.#hello = frame.payload;
    this.#attempt = 0;
    this.#setState("syncing", {});
    this.emit("frame", frame);
    this.emit("hello.ok", frame.payload, frame);
    for (const waiter of this.#helloWaiters.splice(0)) waiter.resolve(frame.payload);
    this.#startPing();
    let stored: number | null | undefined;
    try {
      stored = await this.#cursorStore.get();
    } catch {
      stored = undefined;
    }
    if (this.#ws !== ws) return;
    const from = typeof stored === "number" && Number.isInteger(stored) && stored >= 0 ? stored : frame.payload.cursor;
    if (this.#cursor === undefined || this.#cursor < from) this.#cursor = from;
    const base = Math.max(from, this.#cursor);
    this.#syncBase = base;
    try {
      const done = await this.request("sync", { cursor: base }, { timeoutMs: Math.max(this.#timeout(), 60_000) });
      if (this.#ws !== ws) return;
      if (done.reset) {
        this.#cursor = done.cursor;
        this.#seen.clear();
        this.#seenOrder = [];
        this.#saveCursor();
        this.emit("reset", done.cursor);
      } else if (done.cursor > (this.#cursor ?? -1)) {
        this.#cursor = done.cursor;
        this.#saveCursor();
      }
      this.#setState("open", {});
      this.emit("synced", this.#cursor ?? done.cursor);
      for (const waiter of this.#readyWaiters.splice(0)) waiter.resolve();
    } catch {
      // The socket dropped during the sync: the close handler reconnects and syncs again.
      if (this.#ws === ws) ws?.close(4000, "sync failed");
    }
  }

  #scheduleRetry(reason: string, beforeHello: boolean): void {
    const reconnect = this.#options.reconnect;
    if (reconnect === false) {
      this.#stop("closed", reason);
      return;
    }
    const retry = () => {
      const initial = reconnect?.initialDelayMs ?? 500;
      const max = reconnect?.maxDelayMs ?? 15_000;
      const factor = reconnect?.factor ?? 2;
      const jitter = Math.min(1, Math.max(0, reconnect?.jitter ?? 0.5));
      const full = Math.min(max, initial * factor ** this.#attempt);
      const delay = this.#retryAtOnce ? 0 : Math.round(full * (1 - jitter * Math.random()));
      this.#retryAtOnce = false;
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
        (ok) => (this.#stopped ? undefined : ok ? retry() : this.#stop("unauthorized", "the login session is no longer valid")),
        () => (this.#stopped ? undefined : retry()),
      );
      return;
    }
    retry();
  }

  #stop(state: "closed" | "unauthorized", reason: string): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    this.#stopPing();
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws && ws.readyState <= OPEN) ws.close(1000, "client closed");
    const error = new ClientError(state === "unauthorized" ? "auth" : "closed", reason);
    this.#failPending(error);
    for (const waiter of this.#helloWaiters.splice(0)) waiter.reject(error);
    for (const waiter of this.#readyWaiters.splice(0)) waiter.reject(error);
    this.#setState(state, { reason });
    if (state === "unauthorized") this.emit("unauthorized", reason);
  }

  #startPing(): void {
    this.#stopPing();
    const every = this.#options.pingIntervalMs ?? 25_000;
    if (every <= 0) return;
    this.#pingTimer = setInterval(() => {
      const ws = this.#ws;
      if (!ws) return;
      this.request("ping", { ts: Date.now() }, { timeoutMs: Math.max(every, 10_000) }).catch((error: ClientError) => {
        if (error.code === "timeout" && this.#ws === ws) ws.close(4000, "no pong");
      });
    }, every);
  }

  #stopPing(): void {
    if (this.#pingTimer) clearInterval(this.#pingTimer);
    this.#pingTimer = undefined;
  }

  // ---- frames ----

  #onFrame(frame: ServerFrame): void {
    if (frame.seq !== undefined) {
      const duplicate = frame.seq <= this.#syncBase || this.#seen.has(frame.seq);
      if (!duplicate) {
        this.#seen.add(frame.seq);
        this.#seenOrder.push(frame.seq);
        if (this.#seenOrder.length > SEEN_WINDOW) this.#seen.delete(this.#seenOrder.shift()!);
        if (this.#cursor === undefined || frame.seq > this.#cursor) {
          this.#cursor = frame.seq;
          this.#saveCursor();
        }
      }
      if (frame.id !== undefined) this.#settle(frame.id, frame);
      if (duplicate) return;
    } else if (frame.id !== undefined) {
      this.#settle(frame.id, frame);
    }
    this.emit("frame", frame);
    (this.emit as (event: string, ...args: unknown[]) => boolean)(frame.type, frame.payload ?? {}, frame);
  }

  #onBinary(bytes: Uint8Array): void {
    const chunk = decodeMediaChunk(bytes);
    if (!chunk) return;
    const active = this.#downloads.get(chunk.media);
    if (!active) return;
    // Copy: the chunk may share a buffer that the socket reuses.
    active.chunks.push(chunk.bytes.slice());
    active.received += chunk.bytes.byteLength;
    active.onProgress?.(active.received);
  }

  #saveCursor(): void {
    const cursor = this.#cursor;
    if (cursor === undefined) return;
    try {
      Promise.resolve(this.#cursorStore.set(cursor)).catch(() => undefined);
    } catch {
      // A failing store must not break delivery; the next frame tries again.
    }
  }

  // ---- requests ----

  #newId(): string {
    return `c${++this.#nextId}`;
  }

  #track(id: string, type: string, timeoutMs: number | undefined): Promise<ServerFrame> {
    return new Promise<ServerFrame>((resolve, reject) => {
      const pending: Pending = { type, resolve, reject, timer: undefined };
      if (timeoutMs !== undefined) {
        pending.timer = setTimeout(() => {
          this.#pending.delete(id);
          reject(new ClientError("timeout", `no response to ${type} within ${timeoutMs} ms`, type));
        }, timeoutMs);
      }
      this.#pending.set(id, pending);
    });
  }

  /** Resolve (or, for an `error` frame, reject) the request with this id; without a frame, forget it. */
  #settle(id: string, frame?: ServerFrame): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    if (!frame) return;
    if (frame.type === "error") {
      const { code, message } = frame.payload as ServerPayloads["error"];
      pending.reject(new ClientError(code, message, pending.type));
    } else {
      pending.resolve(frame);
    }
  }

  #failPending(error: ClientError): void {
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    for (const pending of entries) {
      clearTimeout(pending.timer);
      pending.reject(new ClientError(error.code, error.message, pending.type));
    }
  }

  async #waitReady(timeoutMs: number): Promise<void> {
    if (this.#stopped) throw new ClientError("closed", `the client is ${this.#state}`);
    if (this.#ws && this.#ws.readyState === OPEN && (this.#state === "open" || this.#state === "syncing")) return;
    if (!this.#started) void this.connect().catch(() => undefined);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waiter = new Promise<void>((resolve, reject) => {
      // Requests may go out during the sync: the gateway handles them after it, in order.
      const entry = { resolve: () => resolve(), reject };
      this.#helloWaiters.push({ resolve: () => entry.resolve(), reject: entry.reject });
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

  async #call(type: string, payload: Record<string, unknown>, timeoutMs: number): Promise<ServerFrame> {
    const started = Date.now();
    if (type !== "sync") await this.#waitReady(timeoutMs);
    const ws = this.#ws;
    if (!ws) throw new ClientError("disconnected", "not connected", type);
    const id = this.#newId();
    const response = this.#track(id, type, Math.max(1, timeoutMs - (Date.now() - started)));
    ws.send(JSON.stringify({ type, id, payload }));
    return response;
  }

  async #drain(ws: WebSocketLike): Promise<void> {
    while (ws.bufferedAmount > 4 * CHUNK_BYTES && ws.readyState === OPEN && this.#ws === ws) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

async function toBytes(data: Blob | ArrayBuffer | ArrayBufferView): Promise<Uint8Array> {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(await data.arrayBuffer());
}

function defaultDeviceId(): string {
  if (hasLocalStorage()) {
    const key = "chat-gateway:device-id";
    try {
      const existing = window.localStorage.getItem(key);
      if (existing) return existing;
      const id = randomId("web-");
      window.localStorage.setItem(key, id);
      return id;
    } catch {
      // Storage refused (private mode): a random id for this page.
    }
  }
  return randomId("dev-");
}

/**
 * Create a client for a gateway. Call `connect()` to start; listen to frames with `on(type, …)`.
 * @example
 * ```ts
 * const client = createGatewayClient({ url: "ws://127.0.0.1:8787/ws/gateway", deviceId: "laptop" });
 * client.on("message.update", (p) => render(p.message_id, p.text));
 * await client.connect();
 * const echo = await client.sendMessage({ chat_id: "default", text: "hello" });
 * ```
 */
export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  return new GatewayClient(options);
}
