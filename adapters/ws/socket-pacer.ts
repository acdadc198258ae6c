/**
 * Reading new sockets a few at a time (docs/PROTOCOL.md §18.5). libuv accepts every connection
 * waiting in the kernel in one turn of the event loop, and reads and parses every request that
 * has arrived in the next: after a restart, a reconnect storm's thousands of requests made single
 * turns of hundreds of milliseconds, and every connection already in waited that long for its
 * answers. The pacer stops reading each new socket as it is accepted and lets a window of them
 * read at a time, first come first served; a socket leaves the window when its request is parsed,
 * when it closes, or after {@link WINDOW_MS} (it reads on, unpaced, so a socket that sends nothing
 * holds a place that long at most). A turn then parses at most a window's worth of requests, and
 * the others' frames are answered between them. A held socket's request waits in the kernel's
 * buffer, as it would in the listen backlog.
 * @module
 */
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import { Server as TlsServer } from "node:tls";

/** Sockets reading their first request at once. */
export const WINDOW = 16;
/** How long a socket keeps its place in the window without a parsed request (ms). */
export const WINDOW_MS = 100;

/** A place in the window: the socket, and when its place lapses (`performance.now()` time). */
interface Place {
  readonly socket: Socket;
  readonly until: number;
  done: boolean;
}

/**
 * The window over one server's new sockets. It relies on the server's own pause handling: a
 * socket paused after the server's `connection` listener stops reading (see {@link stopReading}),
 * and reads again when resumed.
 */
export class SocketPacer {
  readonly #held = new FifoOf<Socket>();
  readonly #places = new FifoOf<Place>();
  readonly #placeOf = new WeakMap<Socket, Place>();
  #reading = 0;
  #scheduled = false;
  #lapse: NodeJS.Timeout | undefined;
  readonly #onClose: (this: Socket) => void;
  readonly #onRequest = (request: IncomingMessage) => this.parsed(request.socket as Socket);
  readonly #hold = (socket: Socket) => this.#arrived(socket);

  constructor(
    private readonly server: Server,
    private readonly window = WINDOW,
    private readonly windowMs = WINDOW_MS,
  ) {
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

  /** The socket's request was parsed (its `upgrade` or `request` event): its place is free. */
  parsed(socket: Socket): void {
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
    for (let socket = this.#held.shift(); socket; socket = this.#held.shift()) if (!socket.destroyed) socket.resume();
  }

  #arrived(socket: Socket): void {
    // With room and nobody ahead it reads at once: a pause and a resume are two system calls.
    if (this.#reading < this.window && this.#held.size === 0) return this.#place(socket, performance.now());
    socket.pause();
    // A new socket asks for its first read on the next tick, past the pause.
    process.nextTick(stopReading, socket);
    this.#held.push(socket);
    this.#schedule();
  }

  #place(socket: Socket, now: number): void {
    const place: Place = { socket, until: now + this.windowMs, done: false };
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

  /** Frees the places that lapsed, then lets held sockets read while the window has room. */
  #release(): void {
    const now = performance.now();
    for (let place = this.#places.peek(); place && (place.done || place.until <= now); place = this.#places.peek()) {
      this.#places.shift();
      this.#leave(place);
    }
    while (this.#reading < this.window && this.#held.size > 0) {
      const socket = this.#held.shift()!;
      if (socket.destroyed) continue;
      this.#place(socket, now);
      socket.resume();
    }
    // A full window frees itself when its oldest place lapses, even if no request ever comes.
    const oldest = this.#places.peek();
    if (this.#lapse === undefined && this.#held.size > 0 && oldest) {
      this.#lapse = setTimeout(
        () => {
          this.#lapse = undefined;
          this.#schedule();
        },
        oldest.until - now + 1,
      ).unref();
    }
    this.#scheduled = false;
  }
}

/**
 * Paces the new sockets of a plain `http.Server`; the caller reports each parsed upgrade with
 * {@link SocketPacer.parsed} (the pacer sees plain requests itself). A TLS server is left alone
 * (its sockets are read by the TLS layer first): `undefined`.
 */
export function paceSockets(server: Server, window = WINDOW, windowMs = WINDOW_MS): SocketPacer | undefined {
  return server instanceof TlsServer ? undefined : new SocketPacer(server, window, windowMs);
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
