/**
 * A door's device: an in-process connection to the gateway, so a door's request is a device's
 * request under every rule a WebSocket device meets (docs/PROTOCOL.md §19).
 * @module
 */
import type { ConnectionContext, ConnectionHandle, Gateway } from "chat-gateway";
import { type ErrorCode, GatewayError } from "chat-gateway/protocol";

/** A frame the gateway sent to a door's device. */
export interface DoorFrame {
  type: string;
  id?: string;
  seq?: number;
  payload: Record<string, unknown>;
}

/** How a door's device says hello. */
export interface DoorHello {
  /** `hello.token`: the request's bearer, or empty when the context carries the session. */
  token: string;
  /** What the transport knows: the client's address, the verified session, the headers. */
  context: ConnectionContext;
  /** Stable per door and credential, so a device record is reused rather than made per request. */
  deviceId: string;
  deviceName: string;
  /** Called with every frame from the hello on, the join burst of docs/PROTOCOL.md §14 included. */
  onFrame?: (frame: DoorFrame) => void;
  /** Called with the connection's id as soon as the gateway accepted it, before the hello. */
  accepted?: (connectionId: string) => void;
  /** `caps.media`: the request carries images to upload (docs/PROTOCOL.md §7). Default false. */
  media?: boolean;
}

/** The gateway is shutting down or draining (close 1001 or 1012): a door answers 503. */
export class DoorUnavailable extends GatewayError {
  constructor(message: string) {
    super("unsupported", message);
  }
}

/** What a refused request or hello becomes: the gateway's own code and message. */
function refusal(payload: Record<string, unknown>): GatewayError {
  const code = typeof payload.code === "string" ? (payload.code as ErrorCode) : "internal";
  return new GatewayError(code, typeof payload.message === "string" ? payload.message : "refused");
}

interface Pending {
  resolve(frame: DoorFrame): void;
  reject(error: Error): void;
}

/**
 * One door request's device. The caps ask for deltas and pickers (a door streams appends and may
 * show asks), media only when the request uploads images, and no push: its client is reading now.
 */
export class DoorDevice {
  readonly #pending = new Map<string, Pending>();
  readonly #onFrame: ((frame: DoorFrame) => void) | undefined;
  readonly #onClose = new Set<(error: GatewayError) => void>();
  #handle: ConnectionHandle | undefined;
  #next = 0;
  #closed = false;
  #closeReason: GatewayError | undefined;
  #cursor = 0;

  private constructor(onFrame: ((frame: DoorFrame) => void) | undefined) {
    this.#onFrame = onFrame;
  }

  /** Says hello; resolves once `hello.ok` came, rejects with the gateway's error otherwise. */
  static async open(gateway: Gateway, hello: DoorHello): Promise<DoorDevice> {
    const device = new DoorDevice(hello.onFrame);
    const handle = gateway.accept({
      send: (text) => device.#receive(text),
      sendBinary: () => undefined,
      close: (code, reason) => device.#gone(code, reason),
      bufferedAmount: 0,
      context: hello.context,
    });
    device.#handle = handle;
    hello.accepted?.(handle.id);
    const ok = await device.request("hello", {
      token: hello.token,
      device_id: hello.deviceId,
      device_name: hello.deviceName,
      caps: { min_protocol: 1, media: hello.media === true, push: "none", streaming: true, delta: true, pickers: true },
    });
    if (typeof ok.payload.cursor === "number") device.#cursor = ok.payload.cursor;
    return device;
  }

  /**
   * The owner's outbox position `hello.ok` named: every frame stored after it reaches this device
   * (docs/PROTOCOL.md §2), so what was stored past it needs no read of history.
   */
  get cursor(): number {
    return this.#cursor;
  }

  /** Sends a request and resolves with its response frame; an `error` frame rejects. */
  request(type: string, payload: Record<string, unknown>): Promise<DoorFrame> {
    if (this.#closed) return Promise.reject(this.#closeReason ?? new GatewayError("unsupported", "the door closed"));
    const id = `d${++this.#next}`;
    return new Promise<DoorFrame>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#handle?.receiveText(JSON.stringify({ type, id, payload }));
    });
  }

  /** Sends a binary message (a media chunk, docs/PROTOCOL.md §7), in order with the requests. */
  sendBinary(data: Uint8Array): void {
    if (!this.#closed) this.#handle?.receiveBinary(data);
  }

  /** The request's client went away, or the door is done: the gateway lets go of this device. */
  close(): void {
    if (this.#closed) return;
    this.#gone(1000, "done");
    this.#handle?.closed();
  }

  /** Called once when the device ends (the gateway closed it, or {@link DoorDevice.close}). */
  onClose(listener: (error: GatewayError) => void): void {
    if (this.#closed) listener(this.#closeReason as GatewayError);
    else this.#onClose.add(listener);
  }

  get closed(): boolean {
    return this.#closed;
  }

  #receive(text: string): void {
    if (this.#closed) return;
    const frame = JSON.parse(text) as DoorFrame;
    frame.payload ??= {};
    const pending = frame.id === undefined ? undefined : this.#pending.get(frame.id);
    if (pending) {
      this.#pending.delete(frame.id as string);
      if (frame.type === "error") pending.reject(refusal(frame.payload));
      else pending.resolve(frame);
    }
    this.#onFrame?.(frame);
  }

  #gone(code: number, reason?: string): void {
    if (this.#closed) return;
    this.#closed = true;
    const error =
      code === 4401
        ? new GatewayError("auth", reason || "not signed in")
        : code === 1013 || code === 4429
          ? new GatewayError("rate_limited", reason || "try again later")
          : code === 1001 || code === 1012
            ? new DoorUnavailable(reason || "the gateway is shutting down")
            : new GatewayError("unsupported", reason || "the gateway closed the door");
    this.#closeReason = error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    for (const listener of this.#onClose) listener(error);
    this.#onClose.clear();
  }
}
