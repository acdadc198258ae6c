/**
 * Reading new sockets a few at a time (docs/PROTOCOL.md §18.5). libuv accepts every connection
 * waiting in the kernel in one turn of the event loop, and reads and parses every request that
 * has arrived in the next: after a restart, a reconnect storm's thousands of requests made single
 * turns of hundreds of milliseconds, and every connection already in waited that long for its
 * answers. The pacer stops reading each new socket as it is accepted and lets a window of them
 * read at a time, first come first served; a socket leaves the window when its request is handled
 * (an upgrade once the gateway takes or refuses it, see `waitForRoom`: the rest of a storm then
 * waits unread, not as parsed requests that outlive a young generation and leave the old one
 * fragmented), when it closes, or after 100 ms (it reads on, unpaced, so a socket that sends
 * nothing holds a place that long at most), and no socket is held longer than `maxHoldMs`. A turn
 * then parses at most a window's worth of requests, and the others' frames are answered between
 * them. A held socket's request waits in the kernel's buffer, as it would in the listen backlog.
 * @module
 */
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import { Server as TlsServer } from "node:tls";

/** How the new sockets of a server are paced: `paceSockets` in {@link WebSocketOptions} (docs/PROTOCOL.md §18.5). */
export interface PacingOptions {
  /** Sockets reading their first request at once (default 16). */
  window?: number;
  /** How long a socket keeps its place in the window before its request is handled (ms; default 100). */
  windowMs?: number;
  /**
   * How long a socket is held at most (ms; default the adapter's `handshakeTimeoutMs`, 10,000):
   * past it, it reads without a place, up to a window's worth a turn, so sockets that connect and
   * send nothing cannot hold the others back for longer, however many there are. A reconnect
   * storm's sockets wait far less (15,000 were all read within 3 to 5 s in the bench).
   */
  maxHoldMs?: number;
}

const DEFAULTS: Required<PacingOptions> = { window: 16, windowMs: 100, maxHoldMs: 10_000 };

/** A place in the window: the socket, and when its place lapses (`performance.now()` time). */
interface Place {
  readonly socket: Socket;
  readonly until: number;
  done: boolean;
}

/** A socket waiting to read, and when it came (`performance.now()` time). */
interface Held {
  readonly socket: Socket;
  readonly since: number;
}

/**
 * The window over one server's new sockets. It relies on the server's own pause handling: a
 * socket paused after the server's `connection` listener stops reading (see {@link stopReading}),
 * and reads again when resumed.
 */
export class SocketPacer {
  readonly #held = new FifoOf<Held>();
  readonly #places = new FifoOf<Place>();
  readonly #placeOf = new WeakMap<Socket, Place>();
  readonly #limits: Required<PacingOptions>;
  #reading = 0;
  #scheduled = false;
  #lapse: NodeJS.Timeout | undefined;
  readonly #onClose: (this: Socket) => void;
  readonly #onRequest = (request: IncomingMessage) => this.handled(request.socket as Socket);
  readonly #hold = (socket: Socket) => this.#arrived(socket);

  constructor(
    private readonly server: Server,
    options: PacingOptions = {},
  ) {
    this.#limits = { ...DEFAULTS, ...options };
    // One listener for every socket: an emitter calls it with the socket as `this`.
    const leave = (socket: Socket) => this.#leave(this.#placeOf.get(socket));
    this.#onClose = function (this: Socket) {
      leave(this);
    };
    server.on("connection", this.#hold);
    server.on("request", this.#onRequest);
  }

  /** Sockets held now, not yet let read. */
  get held(): number {
    return this.#held.size;
  }

  /**
   * The socket's request was handled (a plain request parsed; an upgrade taken or refused by the
   * gateway, or one for another path parsed): its place is free.
   */
  handled(socket: Socket): void {
    const place = this.#placeOf.get(socket);
    if (!place) return;
    socket.off("close", this.#onClose);
    this.#leave(place);
  }

  /** Detaches from the server and lets every held socket read. */
  stop(): void {
    this.server.off("connection", this.#hold);
    this.server.off("request", this.#onRequest);
    clearTimeout(this.#lapse);
    for (let held = this.#held.shift(); held; held = this.#held.shift())
      if (!held.socket.destroyed) held.socket.resume();
  }

  #arrived(socket: Socket): void {
    const now = performance.now();
    // With room and nobody ahead it reads at once: a pause and a resume are two system calls.
    if (this.#reading < this.#limits.window && this.#held.size === 0) return this.#place(socket, now);
    socket.pause();
    // A new socket asks for its first read on the next tick, past the pause.
    process.nextTick(stopReading, socket);
    this.#held.push({ socket, since: now });
    this.#schedule();
  }

  #place(socket: Socket, now: number): void {
    const place: Place = { socket, until: now + this.#limits.windowMs, done: false };
    this.#places.push(place);
    this.#placeOf.set(socket, place);
    this.#reading++;
    socket.once("close", this.#onClose);
  }

  #leave(place: Place | undefined): void {
    if (!place || place.done) return;
    place.done = true;
    this.#reading--;
    this.#placeOf.delete(place.socket);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#held.size === 0) return;
    this.#scheduled = true;
    setImmediate(() => this.#release());
  }

  /**
   * Frees the places that lapsed, lets held sockets read while the window has room, then lets up
   * to a window's worth of those held too long read without a place.
   */
  #release(): void {
    const now = performance.now();
    const { window, maxHoldMs } = this.#limits;
    for (let place = this.#places.peek(); place && (place.done || place.until <= now); place = this.#places.peek()) {
      this.#places.shift();
      this.#leave(place);
    }
    while (this.#reading < window && this.#held.size > 0) {
      const { socket } = this.#held.shift()!;
      if (socket.destroyed) continue;
      this.#place(socket, now);
      socket.resume();
    }
    for (let late = 0; late < window && (this.#held.peek()?.since ?? now) + maxHoldMs <= now; late++) {
      const { socket } = this.#held.shift()!;
      if (!socket.destroyed) socket.resume();
    }
    this.#scheduled = false;
    if (this.#held.size > 0 && this.#held.peek()!.since + maxHoldMs <= now) return this.#schedule();
    this.#wakeAtLapse(now);
  }

  /** A full window frees itself when its oldest place lapses or its oldest socket is held too long, with no request at all. */
  #wakeAtLapse(now: number): void {
    const first = this.#held.peek();
    if (this.#lapse !== undefined || !first) return;
    const oldest = this.#places.peek();
    const at = Math.min(oldest ? oldest.until : Number.POSITIVE_INFINITY, first.since + this.#limits.maxHoldMs);
    this.#lapse = setTimeout(
      () => {
        this.#lapse = undefined;
        this.#schedule();
      },
      Math.max(0, at - now) + 1,
    ).unref();
  }
}

/**
 * Paces the new sockets of a plain `http.Server`; the caller reports each parsed upgrade with
 * {@link SocketPacer.parsed} (the pacer sees plain requests itself). A TLS server is left alone
 * (its sockets are read by the TLS layer first): `undefined`.
 */
export function paceSockets(server: Server, options: PacingOptions = {}): SocketPacer | undefined {
  return server instanceof TlsServer ? undefined : new SocketPacer(server, options);
}

/**
 * Stops a held socket's reading for good: the server's own `pause` listener does (the socket was
 * paused, but asked for its first read on the tick after it was accepted, and would read on).
 */
function stopReading(socket: Socket): void {
  if (socket.isPaused() && !socket.destroyed) socket.emit("pause");
}

/** A first-in first-out queue that does not shift an array of thousands on every take. */
class FifoOf<T> {
  #items: T[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined as T;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    }
    return item;
  }
}
