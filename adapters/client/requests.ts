/**
 * Requests as promises: each frame sent with a fresh id, settled by the response or `error`
 * frame carrying that id, or rejected on timeout or when the socket drops first.
 * @module
 */
import type { Connection } from "./connection.js";
import { ClientError } from "./errors.js";
import { DEFAULT_REQUEST_TIMEOUT_MS, type GatewayClientOptions } from "./options.js";
import type { RequestPayload, RequestType, ResponsePayload, ServerFrame, ServerPayloads } from "chat-gateway/protocol";

interface Pending {
  type: string;
  resolve(frame: ServerFrame): void;
  reject(error: ClientError): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The requests of one client awaiting their response, across its reconnects. */
export class Requests {
  readonly #connection: Connection;
  readonly #options: GatewayClientOptions;
  #nextId = 0;
  readonly #pending = new Map<string, Pending>();

  /** Requests go out on the connection's current socket. */
  constructor(connection: Connection, options: GatewayClientOptions) {
    this.#connection = connection;
    this.#options = options;
  }

  /** The client's `requestTimeoutMs`. */
  get defaultTimeoutMs(): number {
    return this.#options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** A request id, unique within this client. */
  newId(): string {
    return `c${++this.#nextId}`;
  }

  /** Wait for the frame with this id; without a timeout it waits until settled or the socket drops. */
  track(id: string, type: string, timeoutMs: number | undefined): Promise<ServerFrame> {
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
  settle(id: string, frame?: ServerFrame): void {
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

  /** Reject every waiting request with this error's code and message. */
  failAll(error: ClientError): void {
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    for (const pending of entries) {
      clearTimeout(pending.timer);
      pending.reject(new ClientError(error.code, error.message, pending.type));
    }
  }

  /** Send a request once connected (`sync` goes out during the hello) and wait for its response frame. */
  async call(
    type: string,
    payload: Record<string, unknown>,
    timeoutMs: number = this.defaultTimeoutMs,
  ): Promise<ServerFrame> {
    const started = Date.now();
    if (type !== "sync") await this.#connection.waitReady(timeoutMs);
    const ws = this.#connection.socket;
    if (!ws) throw new ClientError("disconnected", "not connected", type);
    const id = this.newId();
    const response = this.track(id, type, Math.max(1, timeoutMs - (Date.now() - started)));
    ws.send(JSON.stringify({ type, id, payload }));
    return response;
  }

  /** {@link call} with typed payloads, resolving with the response's payload. */
  async request<T extends RequestType>(
    type: T,
    payload: RequestPayload<T>,
    timeoutMs?: number,
  ): Promise<ResponsePayload<T>> {
    const frame = await this.call(type, payload as Record<string, unknown>, timeoutMs);
    return frame.payload as ResponsePayload<T>;
  }
}
