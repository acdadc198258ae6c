/**
 * The transport side of a device connection. A transport adapter (such as `chat-gateway/ws`)
 * wraps its native socket in a `Connection` and hands it to `gateway.accept()`.
 * @module
 */
import type { ConnectionContext } from "./authenticator.js";

/** A socket as the gateway sees it. */
export interface Connection {
  /** Send one text frame (one JSON frame). Must not throw on a closed socket. */
  send(text: string): void;
  /** Send one binary frame (a media chunk). Must not throw on a closed socket. */
  sendBinary(data: Uint8Array): void;
  /** Close with a WebSocket close code. Idempotent. */
  close(code: number, reason?: string): void;
  /**
   * Bytes queued but not yet written to the network, text and binary alike; drives the
   * slow-consumer policy (past `backpressure.hardBytes` the connection is closed 1013).
   */
  readonly bufferedAmount: number;
  /**
   * What the transport learned before the first frame (address, verified login session). Its
   * `remoteAddress` is the client address counted against `maxConnectionsPerIp`; a transport
   * behind a reverse proxy should set it from trusted proxy headers only.
   */
  readonly context: ConnectionContext;
  /**
   * The hello is settled and the gateway will not read {@link Connection.context} again
   * (optional): a transport may let go of what it kept only for the authenticator, such as the
   * upgrade's request headers and the login session's token, so an idle connection does not hold
   * them for its lifetime. `context.remoteAddress` may stay.
   */
  handshakeDone?(): void;
  /**
   * Stop reading from the socket until {@link Connection.resume} (optional). The gateway pauses a
   * connection whose upload chunks arrive faster than the media store writes them, so the bytes
   * wait in kernel buffers instead of memory. Without it, uploads still work but may buffer.
   */
  pause?(): void;
  /** Read from the socket again. */
  resume?(): void;
}

/** What `gateway.accept()` returns: the transport feeds it what the socket receives. */
export interface ConnectionHandle {
  /** A unique id of this connection within the process. */
  readonly id: string;
  /** A text frame arrived. */
  receiveText(text: string): void;
  /** A binary frame (media chunk) arrived. */
  receiveBinary(data: Uint8Array): void;
  /** The socket closed (either side). Uploads in flight are dropped; running turns go on. */
  closed(): void;
}

/**
 * The answer of an upgrade gate (such as the HTTP adapter's login protection) for a WebSocket
 * upgrade request, given before the upgrade happens.
 */
export type UpgradeDecision =
  | {
      ok: true;
      /** What the gate learned (the verified login session), passed on to the authenticator. */
      context?: Pick<ConnectionContext, "session">;
    }
  | {
      ok: false;
      /** HTTP status to answer instead of upgrading (401 no session, 403 bad Origin, 429 …). */
      status: number;
      /** Short reason, sent as the JSON body `{error}`. */
      message: string;
    };
