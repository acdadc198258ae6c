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
 *
 * The window is shared fairly between client addresses (an IPv6 /64, see `addressKey`): one
 * address has at most `windowPerAddress` places, and its sockets past them wait in a line of
 * their own, so a flood of silent sockets from one address holds only that address's sockets,
 * never another's; the addresses waiting for a place take turns. An address with
 * `maxSocketsPerAddress` sockets open has each further one closed as it is accepted, before it
 * costs a read.
 * @module
 */
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import { Server as TlsServer } from "node:tls";
import { addressKey } from "chat-gateway";

/** How the new sockets of a server are paced: `paceSockets` in {@link WebSocketOptions} (docs/PROTOCOL.md §18.5). */
export interface PacingOptions {
  /** Sockets reading their first request at once (default 16). */
  window?: number;
  /**
   * Places of the window one client address (an IPv6 /64) may hold at once (default 8): its other
   * new sockets wait behind its own, never in front of another address's.
   */
  windowPerAddress?: number;
  /**
   * Open sockets of one client address (an IPv6 /64), idle, reading or upgraded (default 256): one
   * more is closed as it is accepted. Behind a reverse proxy every socket comes from the proxy:
   * raise it past the connections the proxy holds (`Infinity` for none).
   */
  maxSocketsPerAddress?: number;
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

const DEFAULTS: Required<PacingOptions> = {
  window: 16,
  windowPerAddress: 8,
  maxSocketsPerAddress: 256,
  windowMs: 100,
  maxHoldMs: 10_000,
};

/** The sockets of one client address: how many are open, reading in the window, and held. */
interface Source {
  readonly key: string;
  open: number;
  reading: number;
  held: number;
  /** Its held sockets, first come first served (those no longer held are skipped). */
  readonly line: FifoOf<Paced>;
  /** In the line of addresses waiting for a place. */
  queued: boolean;
}

/**
 * One open socket of the server. `held`: paused, waiting for a place since `at`; `reading`: in the
 * window until `at` (`performance.now()` time); `past`: its first request handled, its place lapsed,
 * or let read unpaced.
 */
interface Paced {
  readonly socket: Socket;
  readonly source: Source;
  state: "held" | "reading" | "past";
  at: number;
}

/**
 * The window over one server's new sockets. It relies on the server's own pause handling: a
 * socket paused after the server's `connection` listener stops reading (see {@link stopReading}),
 * and reads again when resumed.
 */
export class SocketPacer {
  /** Every held socket in arrival order, for the bound on holding (those no longer held are skipped). */
  readonly #heldInOrder = new FifoOf<Paced>();
  /** Places in the window in the order they lapse (those no longer reading are skipped). */
  readonly #places = new FifoOf<Paced>();
  /** Addresses with a held socket and a place of their own to spare, taking turns. */
  readonly #ready = new FifoOf<Source>();
  readonly #sources = new Map<string, Source>();
  readonly #paced = new WeakMap<Socket, Paced>();
  readonly #limits: Required<PacingOptions>;
  #reading = 0;
  #held = 0;
  #scheduled = false;
  #lapse: NodeJS.Timeout | undefined;
  readonly #onClose: (this: Socket) => void;
  readonly #onRequest = (request: IncomingMessage) => this.handled(request.socket as Socket);
  readonly #accept = (socket: Socket) => this.#arrived(socket);

  /**
   * @param overCap told of each socket closed at accept, with its address's key (to log it:
   *   behind an unannounced proxy the cap closes the whole service's sockets).
   */
  constructor(
    private readonly server: Server,
    options: PacingOptions = {},
    private readonly overCap: (key: string) => void = () => {},
  ) {
    this.#limits = pacingLimits(options);
    // One listener for every socket: an emitter calls it with the socket as `this`.
    const closed = (socket: Socket) => this.#closed(socket);
    this.#onClose = function (this: Socket) {
      closed(this);
    };
    server.on("connection", this.#accept);
    server.on("request", this.#onRequest);
  }

  /** Sockets held now, not yet let read. */
  get held(): number {
    return this.#held;
  }

  /**
   * The socket's request was handled (a plain request parsed; an upgrade taken or refused by the
   * gateway, or one for another path parsed): its place is free.
   */
  handled(socket: Socket): void {
    const paced = this.#paced.get(socket);
    if (paced?.state === "reading") this.#leave(paced);
  }

  /** Detaches from the server and lets every held socket read. */
  stop(): void {
    this.server.off("connection", this.#accept);
    this.server.off("request", this.#onRequest);
    clearTimeout(this.#lapse);
    for (let paced = this.#heldInOrder.shift(); paced; paced = this.#heldInOrder.shift())
      if (paced.state === "held") this.#unhold(paced);
  }

  #arrived(socket: Socket): void {
    const source = this.#sourceOf(socket);
    // Before it costs a read: an address past its sockets holds no more of the server.
    if (source.open >= this.#limits.maxSocketsPerAddress) {
      socket.destroy();
      return this.overCap(source.key);
    }
    source.open++;
    const now = performance.now();
    const paced: Paced = { socket, source, state: "held", at: now };
    this.#paced.set(socket, paced);
    socket.once("close", this.#onClose);
    // With room and nobody ahead it reads at once: a pause and a resume are two system calls.
    if (this.#reading < this.#limits.window && this.#ready.size === 0 && this.#mayRead(source))
      return this.#place(paced, now);
    socket.pause();
    // A new socket asks for its first read on the next tick, past the pause.
    process.nextTick(stopReading, socket);
    this.#held++;
    source.held++;
    source.line.push(paced);
    this.#heldInOrder.push(paced);
    this.#queue(source);
    this.#schedule();
  }

  /** The socket's address, counted from its first socket to its last (a Unix socket's have none: they share one). */
  #sourceOf(socket: Socket): Source {
    const address = socket.remoteAddress;
    const key = address === undefined ? "" : addressKey(address);
    let source = this.#sources.get(key);
    if (!source) {
      source = { key, open: 0, reading: 0, held: 0, line: new FifoOf(), queued: false };
      this.#sources.set(key, source);
    }
    return source;
  }

  /** The address may take a place now: it has one to spare and none of its sockets waits for one. */
  #mayRead(source: Source): boolean {
    return source.reading < this.#limits.windowPerAddress && source.held === 0;
  }

  /** Puts an address with a held socket and a place to spare in the line of those waiting. */
  #queue(source: Source): void {
    if (source.queued || source.held === 0 || source.reading >= this.#limits.windowPerAddress) return;
    source.queued = true;
    this.#ready.push(source);
  }

  #place(paced: Paced, now: number): void {
    paced.state = "reading";
    paced.at = now + this.#limits.windowMs;
    this.#places.push(paced);
    this.#reading++;
    paced.source.reading++;
  }

  /** A held socket stops being held: it takes a place, is let read unpaced, or closed. */
  #unhold(paced: Paced): void {
    paced.state = "past";
    this.#held--;
    paced.source.held--;
    if (!paced.socket.destroyed) paced.socket.resume();
  }

  #leave(paced: Paced): void {
    paced.state = "past";
    this.#reading--;
    paced.source.reading--;
    this.#queue(paced.source);
    this.#schedule();
  }

  #closed(socket: Socket): void {
    const paced = this.#paced.get(socket);
    if (!paced) return;
    this.#paced.delete(socket);
    if (paced.state === "reading") this.#leave(paced);
    else if (paced.state === "held") this.#unhold(paced);
    const { source } = paced;
    if (--source.open === 0) this.#sources.delete(source.key);
  }

  #schedule(): void {
    if (this.#scheduled || this.#held === 0) return;
    this.#scheduled = true;
    setImmediate(() => this.#release());
  }

  /**
   * Frees the places that lapsed, lets held sockets read while the window has room, the addresses
   * waiting taking turns, then lets up to a window's worth of those held too long read without a place.
   */
  #release(): void {
    const now = performance.now();
    const { window, maxHoldMs } = this.#limits;
    for (let place = this.#places.peek(); place && (place.state !== "reading" || place.at <= now); ) {
      this.#places.shift();
      if (place.state === "reading") this.#leave(place);
      place = this.#places.peek();
    }
    while (this.#reading < window && this.#ready.size > 0) {
      const source = this.#ready.shift()!;
      source.queued = false;
      const next = firstHeld(source.line);
      if (!next) continue;
      source.line.shift();
      this.#unhold(next);
      this.#place(next, now);
      this.#queue(source);
    }
    for (let late = 0; late < window && (firstHeld(this.#heldInOrder)?.at ?? now) + maxHoldMs <= now; late++)
      this.#unhold(this.#heldInOrder.shift()!);
    this.#scheduled = false;
    const oldest = firstHeld(this.#heldInOrder);
    if (oldest && oldest.at + maxHoldMs <= now) return this.#schedule();
    this.#wakeAtLapse(now);
  }

  /** A full window frees itself when its oldest place lapses or its oldest socket is held too long, with no request at all. */
  #wakeAtLapse(now: number): void {
    const first = firstHeld(this.#heldInOrder);
    if (this.#lapse !== undefined || !first) return;
    const oldest = this.#places.peek();
    const at = Math.min(oldest ? oldest.at : Number.POSITIVE_INFINITY, first.at + this.#limits.maxHoldMs);
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
 * The options with their defaults.
 * @throws {TypeError} on a bound that is not a positive number (`maxSocketsPerAddress` may be `Infinity`)
 */
export function pacingLimits(options: PacingOptions): Required<PacingOptions> {
  const limits = { ...DEFAULTS, ...options };
  for (const [name, value] of Object.entries(limits)) {
    const finite = name !== "maxSocketsPerAddress";
    if (typeof value !== "number" || !(value > 0) || (finite && !Number.isFinite(value)))
      throw new TypeError(`attachWebSocket: paceSockets.${name} must be a positive number, got ${String(value)}`);
  }
  return limits;
}

/** The first socket of `line` still held, after dropping those that no longer are. */
function firstHeld(line: FifoOf<Paced>): Paced | undefined {
  while (line.size > 0 && line.peek()!.state !== "held") line.shift();
  return line.peek();
}

/**
 * Paces the new sockets of a plain `http.Server`; the caller reports each parsed upgrade with
 * {@link SocketPacer.parsed} (the pacer sees plain requests itself). A TLS server is left alone
 * (its sockets are read by the TLS layer first): `undefined`.
 */
export function paceSockets(
  server: Server,
  options: PacingOptions = {},
  overCap?: (key: string) => void,
): SocketPacer | undefined {
  return server instanceof TlsServer ? undefined : new SocketPacer(server, options, overCap);
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
