/**
 * One `ws` socket as the gateway's `Connection`. A class rather than an object of closures: its
 * methods live once on the prototype, so an idle connection costs one small object here instead
 * of six functions and their scope (bench/capacity.ts counts what an idle device costs).
 * @module
 */
import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import type { Connection, ConnectionContext } from "chat-gateway";

/** The context of every connection past its hello: the gateway no longer reads it. */
const SPENT: ConnectionContext = Object.freeze({});

/**
 * Frames written to one socket within one tick leave in one write. `ws` writes every frame as a
 * write system call of its own (header and payload in one `writev`), and on loopback, where the
 * kernel does the receiving side's work in the sender's call too, those calls were the largest
 * part of a busy serving process's CPU (37 % in a profile of bench/storage-sqljs-wire.ts). A
 * turn's frames, a response and the frames it caused are usually written in the same tick.
 *
 * The first frame of a tick corks the socket and the end of the tick (`process.nextTick`, which
 * runs after the promise callbacks queued meanwhile) uncorks it, which writes everything queued,
 * in order. `ws` corks around each frame as well; corks nest, so its frames wait for ours.
 */
export class WsConnection implements Connection {
  readonly #ws: WebSocket;
  readonly #socket: Duplex;
  #corked = false;

  constructor(
    ws: WebSocket,
    socket: Duplex,
    public context: ConnectionContext,
  ) {
    this.#ws = ws;
    this.#socket = socket;
  }

  /** The upgrade's headers and the login session were for the authenticator: not kept past the hello. */
  handshakeDone(): void {
    this.context = SPENT;
  }

  send(text: string): void {
    if (this.#ws.readyState !== this.#ws.OPEN) return;
    this.#batch();
    this.#ws.send(text);
  }

  sendBinary(data: Uint8Array): void {
    if (this.#ws.readyState !== this.#ws.OPEN) return;
    this.#batch();
    this.#ws.send(data, { binary: true });
  }

  close(code: number, reason: string): void {
    const ws = this.#ws;
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
  }

  get bufferedAmount(): number {
    return this.#ws.bufferedAmount;
  }

  pause(): void {
    this.#ws.pause();
  }

  resume(): void {
    this.#ws.resume();
  }

  #batch(): void {
    if (this.#corked || this.#socket.destroyed) return;
    this.#corked = true;
    this.#socket.cork();
    process.nextTick(WsConnection.#flush, this);
  }

  static #flush(connection: WsConnection): void {
    connection.#corked = false;
    connection.#socket.uncork();
  }
}
