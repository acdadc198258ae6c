/**
 * The gateway client: the public face that joins its parts (the connection, requests, sync,
 * transfers and the history pager) and turns every frame into a typed event.
 * @module
 */
import { EventEmitter } from "eventemitter3";
import type { MediaRef, Completion } from "chat-gateway";
import type { ClientPayloads, RequestPayload, RequestType, ResponsePayload, ServerFrame } from "chat-gateway/protocol";
import { Connection } from "./connection.js";
import type { WebSocketLike } from "./socket.js";
import { defaultCursorStore, defaultDeviceId, defaultOpenAsksStore } from "./device.js";
import { ClientError } from "./errors.js";
import type { ConnectionState, GatewayClientEvents } from "./events.js";
import type { HelloOkPayload, LaneRef, MessagePayload, OpenAsk, PickerResolvedPayload } from "./frames.js";
import { HistoryPager, type LaneQuery } from "./history-pager.js";
import { randomId } from "./media.js";
import { OpenAsks } from "./open-asks.js";
import {
  MIN_BULK_TIMEOUT_MS,
  type GatewayClientOptions,
  type RequestOptions,
  type SendInput,
  type SendOptions,
} from "./options.js";
import { Requests } from "./requests.js";
import { StreamTexts } from "./stream-texts.js";
import { Replay } from "./sync.js";
import { Transfers, type Download, type DownloadOptions, type UploadOptions } from "./transfers.js";
import { LiveTurns, type RunningTurn } from "./live-turns.js";
import { UnreadCounts } from "./unread.js";

/**
 * A connection to a gateway that stays up: it says hello, syncs from its cursor, and after any
 * drop reconnects with backoff and syncs again. Frames arrive as typed events; requests are
 * promises. Create it with {@link createGatewayClient}.
 */
export class GatewayClient extends EventEmitter<GatewayClientEvents> {
  readonly #connection: Connection;
  readonly #requests: Requests;
  readonly #replay: Replay;
  readonly #transfers: Transfers;
  readonly #streams = new StreamTexts();
  readonly #asks: OpenAsks;
  readonly #live = new LiveTurns();
  readonly #unread = new UnreadCounts(() => this.request("channel.list", {}));

  /** Use {@link createGatewayClient}. */
  constructor(options: GatewayClientOptions) {
    super();
    if (!options.url) throw new TypeError("createGatewayClient: url is required");
    const deviceId = options.deviceId ?? defaultDeviceId();
    this.#replay = new Replay(options.cursorStore ?? defaultCursorStore(options.url, deviceId));
    this.#asks = new OpenAsks(options.openAsksStore ?? defaultOpenAsksStore(options.url, deviceId));
    // A new connection is sent the running turns and queues afresh (docs/PROTOCOL.md §14.3).
    this.on("state", (state) => {
      if (state !== "syncing") return;
      this.#live.clear();
      this.emit("turns", []);
      this.emit("queues", []);
    });
    // Frames missed while away may have moved the counts: the gateway's are the truth.
    this.on("synced", () => this.#unread.resync());
    this.on("reset", () => {
      if (this.#asks.dropExpired(Date.now()).length > 0) this.emit("asks", this.#asks.list());
    });
    this.#connection = new Connection(options, deviceId, {
      events: this,
      onFrame: (frame) => this.#onFrame(frame),
      onBinary: (bytes) => this.#transfers.onBinary(bytes),
      onHello: (ws, hello) => {
        this.#streams.reset();
        void this.#sync(ws, hello);
      },
      onClosed: (error, forGood) => {
        this.#requests.failAll(error);
        if (!forGood) this.#replay.invalidate();
      },
      ping: (timeoutMs) => this.#requests.request("ping", { ts: Date.now() }, timeoutMs),
    });
    this.#requests = new Requests(this.#connection, options);
    this.#transfers = new Transfers(this.#connection, this.#requests, options);
  }

  /** The connection state. */
  get state(): ConnectionState {
    return this.#connection.state;
  }
  /** The latest `hello.ok` (limits, user, the gateway's streaming setting). */
  get helloOk(): HelloOkPayload | undefined {
    return this.#connection.helloOk;
  }
  /** The signed-in user, once connected (null when login protection is off). */
  get user(): string | null | undefined {
    return this.#connection.helloOk?.user;
  }
  /** The newest `seq` seen. */
  get cursor(): number | undefined {
    return this.#replay.cursor;
  }
  /** This device's id. */
  get deviceId(): string {
    return this.#connection.deviceId;
  }
  /** Whether this device asks for streamed answers (`caps.streaming`). */
  get streaming(): boolean {
    return this.#connection.streaming;
  }

  /**
   * Start connecting (and reconnecting); resolves with the first `hello.ok`. Rejects with
   * `auth` when the credential is refused, or `closed` when {@link close} is called first.
   * Calling it again after a successful start resolves with the latest `hello.ok`.
   */
  connect(): Promise<HelloOkPayload> {
    return this.#connection.connect();
  }

  /** Resolves once the socket is open and the sync has finished. */
  ready(): Promise<void> {
    return this.#connection.ready();
  }

  /** Close the socket and stop reconnecting. Pending requests reject with `closed`. */
  close(): void {
    this.#connection.stop("closed", "closed by the client");
  }

  /**
   * Turn streamed answers on or off for this device (`caps.streaming`). Caps travel in `hello`,
   * so an open connection is re-established; resolves with the new `hello.ok`.
   */
  async setStreaming(on: boolean): Promise<HelloOkPayload> {
    return this.#connection.setStreaming(on);
  }

  /**
   * The network or the app came back (`online`, `pageshow`, the page visible again): the backoff
   * starts over and a running wait is skipped; an open socket, which may have died unnoticed, is
   * pinged and replaced when no pong comes within the ping interval (at most 5 s).
   */
  reconnectNow(): void {
    this.#connection.reconnectNow();
  }

  /**
   * The network is gone (a browser's `offline` event): the socket is given up at once, so the
   * state is `reconnecting` now and a `sendMessage` waits to be sent again with its
   * `client_msg_id` (docs/PROTOCOL.md §21). Attempts follow the backoff until {@link reconnectNow}.
   */
  networkLost(): void {
    this.#connection.networkLost();
  }

  /**
   * Send a request and resolve with its response's payload. Waits for the connection when it is
   * down (counting against the timeout). Rejects with a {@link ClientError}: the gateway's code
   * from an `error` frame with this id, `timeout`, `disconnected` (the socket dropped first; the
   * request may or may not have been handled) or `closed`.
   */
  async request<T extends RequestType>(
    type: T,
    payload: RequestPayload<T>,
    options: RequestOptions = {},
  ): Promise<ResponsePayload<T>> {
    return this.#requests.request(type, payload, options.timeoutMs);
  }

  /** The whole response frame of a request (with `seq` when the response is stored). */
  requestFrame<T extends RequestType>(
    type: T,
    payload: RequestPayload<T>,
    options: RequestOptions = {},
  ): Promise<ServerFrame> {
    return this.#requests.call(type, payload as Record<string, unknown>, options.timeoutMs);
  }

  /**
   * Send a message and resolve with its echo. A `client_msg_id` is added when absent, and a
   * send cut off by a dropped connection is retried with it until the timeout, so the message is
   * stored once (the gateway recognises the retry).
   */
  async sendMessage(input: SendInput, options: SendOptions = {}): Promise<MessagePayload> {
    const payload = {
      ...input,
      client_msg_id: input.client_msg_id ?? randomId("cm"),
      ...(options.whenBusy ? { when_busy: options.whenBusy } : {}),
    };
    const deadline = Date.now() + (options.timeoutMs ?? this.#requests.defaultTimeoutMs);
    for (;;) {
      try {
        return await this.request("message.send", payload, { timeoutMs: Math.max(1, deadline - Date.now()) });
      } catch (error) {
        if (!(error instanceof ClientError) || error.code !== "disconnected" || Date.now() >= deadline) throw error;
      }
    }
  }

  /** Update this device's push targets (`fcm.register`: `fcm_token`, `ntfy_topic`, or a Web Push subscription as `webpush`, `null` clearing it); the gateway sends no response. */
  async registerPush(target: ClientPayloads["fcm.register"], options: RequestOptions = {}): Promise<void> {
    await this.#connection.waitReady(options.timeoutMs ?? this.#requests.defaultTimeoutMs);
    this.#connection.socket?.send(JSON.stringify({ type: "fcm.register", payload: target }));
  }

  /**
   * Tell every device of the owner that this one has shown a lane up to and including
   * `messageId` (`read`, docs/PROTOCOL.md §15): the lane's watermark moves there unless it is
   * already at or past it. No response; a message not in the lane comes back as an `error` event
   * (`not_found`) carrying the id the frame was sent with.
   */
  async markRead(lane: LaneRef, messageId: string, options: RequestOptions = {}): Promise<void> {
    await this.#connection.waitReady(options.timeoutMs ?? this.#requests.defaultTimeoutMs);
    const payload = { chat_id: lane.chat_id, thread_id: lane.thread_id ?? undefined, message_id: messageId };
    this.#connection.socket?.send(JSON.stringify({ type: "read", id: this.#requests.newId(), payload }));
  }

  /**
   * Unread answers by `chat_id` (a channel counts its threads too, at most 999), as the last
   * `channel.list` gave them and kept current from new answers and `read` frames of every device;
   * empty before the first `channel.list`. The `unread` event says when they changed.
   */
  unreadCounts(): Record<string, number> {
    return this.#unread.all();
  }

  /**
   * The answers running now (docs/PROTOCOL.md §14.3), of one lane when given: text so far and
   * running tools, as every device sees them, also on a device that connected mid-turn. The
   * `turns` event says when it changed.
   */
  runningTurns(lane?: LaneRef): RunningTurn[] {
    return this.#live.turns(lane);
  }

  /**
   * A lane's waiting messages in the order they will run (docs/PROTOCOL.md §14.4), as every device
   * sees them; empty when none wait. The `queues` event says when a queue changed. Cancel one with
   * `request("message.delete", …)`; send with `whenBusy: "interrupt"` to run one next.
   */
  laneQueue(lane: LaneRef): string[] {
    return this.#live.queue(lane);
  }

  /**
   * Stop the lane's running turn wherever it runs (`turn.stop`, docs/PROTOCOL.md §14.4), storing
   * nothing; resolves with the id of the stopped answer, or `null` when nothing was running.
   */
  async stop(lane: LaneRef, options: RequestOptions = {}): Promise<string | null> {
    const stopped = await this.request(
      "turn.stop",
      { chat_id: lane.chat_id, thread_id: lane.thread_id ?? null },
      options,
    );
    return stopped.message_id;
  }

  /**
   * The asks waiting for an answer (docs/PROTOCOL.md §11), oldest first, optionally of one lane:
   * what a UI renders as cards. Kept up to date live and through sync; the `asks` event says
   * when it changed.
   */
  openAsks(lane?: LaneRef): OpenAsk[] {
    const all = this.#asks.list();
    return lane === undefined
      ? all
      : all.filter((ask) => ask.chat_id === lane.chat_id && (ask.thread_id ?? null) === (lane.thread_id ?? null));
  }

  /**
   * Answer an ask with `picker.select`: an offered option (a model's `id` for a model picker)
   * and/or text where the ask allows it. Resolves with the `picker.resolved` that stands: this
   * answer, or, when another device answered first or the ask ended, the outcome that stands.
   * Rejects `not_found` for an unknown ask, `unsupported` for an option not offered or text not
   * allowed.
   */
  async select(
    pickerId: string,
    answer: { option_id?: string; text?: string },
    options: RequestOptions = {},
  ): Promise<PickerResolvedPayload> {
    return this.request("picker.select", { picker_id: pickerId, ...answer }, options);
  }

  /**
   * Completions of a typed slash command in a lane (`commands.complete`), e.g. `/model d` →
   * `/model demo-fast`; each `value` is the whole completed line. A text that is no slash
   * command has none.
   */
  async complete(lane: LaneRef, text: string, options: RequestOptions = {}): Promise<Completion[]> {
    const response = await this.request(
      "commands.complete",
      { chat_id: lane.chat_id, thread_id: lane.thread_id, text },
      options,
    );
    return response.completions;
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
    return this.#transfers.upload(data, options);
  }

  /**
   * Download media with `media.pull`; resolves with the bytes and their sha256. Rejects with
   * `download_failed` when more bytes arrive than offered (`options.size`, else the last
   * `media.offer` of the id, else `hello.ok.limits.max_media_bytes`), fewer than a known size,
   * a chunk out of order, or a digest other than `options.sha256`.
   */
  async download(mediaId: string, options: DownloadOptions = {}): Promise<Download> {
    return this.#transfers.download(mediaId, options);
  }

  /** After `hello.ok`: sync from the cursor, then the connection is open. */
  async #sync(ws: WebSocketLike, hello: HelloOkPayload): Promise<void> {
    const stored = await this.#replay.stored();
    if (this.#connection.socket !== ws) return;
    const base = this.#replay.begin(stored, hello.cursor);
    try {
      const done = await this.#requests.request(
        "sync",
        { cursor: base },
        Math.max(this.#requests.defaultTimeoutMs, MIN_BULK_TIMEOUT_MS),
      );
      if (this.#connection.socket !== ws) return;
      if (this.#replay.finish(done)) this.emit("reset", done.cursor);
      this.#connection.markSynced(this.#replay.cursor ?? done.cursor);
    } catch {
      // The socket dropped during the sync: the close handler reconnects and syncs again.
      if (this.#connection.socket === ws) ws?.close(4000, "sync failed");
    }
  }

  #onFrame(frame: ServerFrame): void {
    if (frame.seq !== undefined) {
      const duplicate = this.#replay.isDuplicate(frame.seq);
      if (frame.id !== undefined) this.#requests.settle(frame.id, frame);
      if (duplicate) return;
    } else if (frame.id !== undefined) {
      this.#requests.settle(frame.id, frame);
    }
    if (frame.type === "message.update") {
      const update = frame.payload as ServerFrame<"message.update">["payload"];
      const whole = this.#streams.apply(update);
      if (whole === undefined) return void this.emit("stream.gap", update.message_id);
      frame = { ...frame, payload: whole };
    } else {
      this.#streams.observe(frame);
    }
    if (frame.type === "media.offer") {
      const offer = frame.payload as ServerFrame<"media.offer">["payload"];
      this.#transfers.noteOffer(offer.media_id, offer.size);
    }
    this.emit("frame", frame);
    const asksChanged = this.#asks.track(frame);
    const live = this.#live.apply(frame);
    const unread = this.#unread.handle(frame);
    (this.emit as (event: string, ...args: unknown[]) => boolean)(frame.type, frame.payload ?? {}, frame);
    if (asksChanged) this.emit("asks", this.#asks.list());
    if (live.turns) this.emit("turns", this.#live.turns());
    if (live.queues) this.emit("queues", this.#live.queues());
    if (unread) this.emit("unread", this.#unread.all());
  }
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
