/**
 * One device connection: the hello deadline, what the handshake decided carried out, and its
 * lifecycle. Its caps per address, frame queue and rate budget are in `intake.ts`, the hello's
 * decision in `handshake.ts`, what it receives in `delivery.ts`, sync in `outbox/sync.ts`, the
 * requests in `requests/dispatch.ts`. Requests are handled one at a time per connection, in order.
 * @module
 */
import { randomBytes } from "node:crypto";
import type { OutgoingFrame } from "../contracts/bus.js";
import type { Connection, ConnectionHandle } from "../contracts/connection.js";
import { CLOSE_CODES, GatewayError, isGatewayError, toWireError } from "../protocol/errors.js";
import type { ClientFrame } from "../protocol/client-frames.js";
import { FrameError, parseClientFrame } from "../protocol/parse-client-frame.js";
import { AUTH_CLOSE, BUSY_CLOSE, shakeHands, type Attached, type CloseWith } from "./handshake.js";
import type { HelloFrame, HelloOutcome, HelloReady } from "./handshake.js";
import type { Subscriber } from "../outbox/fan-out.js";
import type { ConnectionId, Owner, RequestId, Seq } from "../protocol/ids.js";
import { Delivery } from "./delivery.js";
import { outflowLimits } from "./outflow.js";
import type { ServerFrame } from "../protocol/protocol.js";
import type { Device, DeviceCaps } from "../contracts/records.js";
import { handleRequest, type RequestSession } from "../requests/dispatch.js";
import { AdmissionWatch, type Revocation } from "./revocation.js";
import { createUploads, type Uploads } from "../media/media-transfer.js";
import { shareState } from "../lanes/shared-state.js";
import { countFrame } from "./traffic.js";
import { peekId, tooBig } from "./wire.js";
import { retryReason } from "../admission/hello-gate.js";
import type { ConnectionAdmission } from "../admission/connection-admission.js";
import { BinaryBacklog } from "./binary-backlog.js";
import { type BurstHolder, type FrameBurst, isSmallPing, leaveShares } from "./intake.js";
import { queueAfter, type Shares, spendFrame } from "./intake.js";
import { TokenBucket } from "./token-bucket.js";
import type { SessionServices } from "./session-services.js";
import type { ClockTimer } from "../support/clock.js";

let nextConnection = 0;
/** Makes connection ids unique across processes that share a bus. */
const PROCESS_TAG = randomBytes(4).toString("hex");

/** A connection from `hello` to close. */
export class DeviceSession implements Subscriber, ConnectionHandle, RequestSession, BurstHolder {
  readonly id: ConnectionId = `c${PROCESS_TAG}-${++nextConnection}`;
  readonly #services: SessionServices;
  readonly #conn: Connection;
  readonly #bucket: TokenBucket;
  /** Its shares of its address's and owner's frame budgets. */
  readonly #shares: Shares = {};
  /** How often it may ping outside the budgets; made at the first ping. */
  #pings: TokenBucket | undefined;
  /** The frames queued and not yet worked off; none while the connection is idle. */
  #burst: FrameBurst | undefined;
  #state: "hello" | "ready" | "closed" = "hello";
  #owner: Owner | undefined;
  #user: string | null = null;
  #device: Device | undefined;
  /** The owner whose frames this session receives, from the start of hello.ok's preparation. */
  #attached: Owner | undefined;
  readonly #delivery: Delivery;
  #helloTimer: ClockTimer | undefined;
  /** Made at the first binary message: most connections never send one. */
  #backlog: BinaryBacklog | undefined;
  /** Its way through admission: its address's caps, its hello's place (docs/PROTOCOL.md §18.5). */
  readonly #pass: ConnectionAdmission;
  readonly #admission = new AdmissionWatch();
  /** Made at the first media frame: an idle connection holds no media state (bench/capacity.ts). */
  #uploads: Uploads | undefined;

  constructor(services: SessionServices, conn: Connection) {
    this.#services = services;
    this.#conn = conn;
    this.#bucket = new TokenBucket(services.options.rateLimit, services.options.now);
    this.#delivery = new Delivery(conn, outflowLimits(services.options), this, services.traffic.sent);
    this.#pass = services.admission.connection();
  }

  get uploads(): Uploads {
    this.#uploads ??= createUploads(this.#services, this);
    return this.#uploads;
  }

  /** For {@link Delivery}: the device's caps once `hello` is done. */
  get deviceCaps(): DeviceCaps | undefined {
    return this.#device?.caps;
  }

  /** For {@link Delivery}: past the hard limit of queued bytes (docs/PROTOCOL.md §2.4). */
  tooSlow(): void {
    this.close(CLOSE_CODES.tryAgainLater, "too slow; reconnect and sync");
  }

  /** The gateway took the connection: it counts against its address, and the hello deadline starts. */
  open(): void {
    const refusal = this.#pass.open(this.#conn.context.remoteAddress);
    if (refusal !== undefined) return this.#refuseBusy(refusal);
    const address = this.#pass.address;
    if (address !== undefined) this.#shares.address = this.#services.budgets.framesPerAddress.join(address);
    const ms = this.#services.options.helloTimeoutMs;
    this.#helloTimer = this.#services.options.clock.setTimeout(
      () => {
        if (this.#state !== "hello") return;
        this.send({ type: "error", payload: { code: "auth", message: `hello not completed within ${ms} ms` } });
        this.close(CLOSE_CODES.helloTimeout, "hello timeout");
      },
      ms,
      true,
    );
  }

  get owner(): Owner {
    if (this.#owner === undefined) throw new GatewayError("auth", "hello first");
    return this.#owner;
  }
  get user(): string | null {
    return this.#user;
  }
  get device(): Device {
    if (!this.#device) throw new GatewayError("auth", "hello first");
    return this.#device;
  }
  get caps(): DeviceCaps {
    return this.device.caps;
  }

  receiveText(text: string): void {
    if (this.#state === "closed") return;
    if (tooBig(text, this.#services.options.maxFrameBytes)) {
      this.close(CLOSE_CODES.tooBig, "frame too large");
      return;
    }
    if (this.#state === "hello" && !this.#pass.entered) {
      this.#pass.firstFrame();
      // Shed before any work is queued for it: that queue is what stalled everyone in a storm.
      if (!this.#pass.enter(text.length)) return this.#shed(text);
      if (this.#pass.waiting) this.#enqueue(() => this.#pass.waitForPlace(() => this.#isClosed()));
    }
    if (this.#state === "ready" && isSmallPing(text)) {
      // Answered whatever the budgets hold; a connection that pings past its own rate is closed.
      this.#pings ??= new TokenBucket(this.#services.options.rateLimit, this.#services.options.now);
      if (!this.#pings.take()) return this.#refuseBusy("too many pings; slow down", peekId(text), "too many pings");
    } else if (!this.#spend(text.length)) {
      return this.#sendError(new GatewayError("rate_limited", "too many frames; slow down"), peekId(text));
    }
    this.#enqueue(() => this.#handleText(text));
  }

  receiveBinary(data: Uint8Array): void {
    if (this.#state === "closed") return;
    // Binary first is no hello; after a hello it waits with the text frames, in order (docs/PROTOCOL.md §2.1).
    if (this.#state === "hello" && !this.#pass.entered) {
      this.#pass.firstFrame();
      this.#enqueue(async () => this.#refuseAuth(new GatewayError("auth", "the first frame must be hello")));
      return;
    }
    this.#backlog ??= new BinaryBacklog(this.#conn);
    this.#enqueue(this.#backlog.hold(data.byteLength, () => this.#takeChunk(data)));
  }

  /**
   * Only chunks of an upload in flight are free: other binary messages spend the frame budget, and
   * past it are dropped without a reply, so garbage buys neither a reply nor much work.
   */
  async #takeChunk(data: Uint8Array): Promise<void> {
    if (this.#isClosed()) return; // the hello it followed was refused, or the socket went meanwhile
    if (!this.uploads.inFlight(data) && !this.#spend(data.byteLength)) return;
    try {
      await this.uploads.chunk(data);
    } catch (error) {
      this.#sendError(error, undefined);
    }
  }

  /** The frame budgets, checked on arrival from the first frame on: a flood is refused before work is queued for it. */
  #spend(size: number): boolean {
    return spendFrame(this.#services, { conn: this.#conn, bucket: this.#bucket, shares: this.#shares }, size);
  }

  closed(): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#services.options.clock.clearTimeout(this.#helloTimer);
    this.#helloTimer = undefined;
    this.#pass.closed();
    this.#delivery.stop();
    leaveShares(this.#shares);
    this.#admission.stop();
    this.#uploads?.dropAll();
    if (this.#attached !== undefined) this.#services.detach(this.#attached, this);
    const deviceId = this.#device?.device_id;
    this.#services.events.emit("disconnect", { owner: this.#owner, deviceId, connectionId: this.id });
  }

  close(code: number, reason: string): void {
    this.#conn.close(code, reason);
    this.closed();
  }

  /** Ends the connection (`error` auth, 4401) when `revocation` covers what it was admitted with; true if it did. */
  revoke(revocation: Revocation): boolean {
    if (this.#state === "closed" || !this.#admission.hear(revocation)) return false;
    this.#refuseAuth(new GatewayError("auth", "your session ended; sign in again"));
    return true;
  }

  #enqueue(work: () => Promise<void>): void {
    this.#burst = queueAfter(this.#services, this.#burst, this, work);
  }

  /** For the intake: the frames queued so far are worked off. */
  burstDone(burst: FrameBurst): void {
    if (this.#burst === burst) this.#burst = undefined;
  }

  async #handleText(text: string): Promise<void> {
    if (this.#state === "closed") return;
    let frame: ClientFrame;
    try {
      frame = parseClientFrame(text);
    } catch (error) {
      const requestId = error instanceof FrameError ? error.requestId : undefined;
      if (this.#state === "hello") {
        this.#services.traffic.hellosRefused++;
        return this.#refuseAuth(
          new GatewayError("auth", `the first frame must be a valid hello (${(error as Error).message})`),
          requestId,
        );
      }
      return this.#sendError(error, requestId);
    }
    countFrame(this.#services.traffic.received, frame.type);
    if (this.#state === "hello") {
      if (frame.type !== "hello") {
        this.#services.traffic.hellosRefused++;
        return this.#refuseAuth(new GatewayError("auth", "the first frame must be hello"), frame.id);
      }
      await this.#hello(frame);
      this.#pass.helloEnded();
      this.#conn.handshakeDone?.();
      // #ready() sets the device; a refused hello leaves it unset.
      if (this.#device !== undefined) this.#services.traffic.hellosOk++;
      else this.#services.traffic.hellosRefused++;
      return;
    }
    if (frame.type === "hello") {
      return this.#sendError(new GatewayError("unsupported", "hello was already sent on this connection"), frame.id);
    }
    try {
      await handleRequest(this.#services, this, frame);
    } catch (error) {
      this.#sendError(error, frame.id);
    }
  }

  async #hello(frame: HelloFrame): Promise<void> {
    const conn = {
      context: this.#conn.context,
      admission: this.#admission,
      isClosed: () => this.#isClosed(),
      attach: (owner: Owner) => this.#attach(owner),
      expired: () =>
        this.#isClosed() || this.#refuseAuth(new GatewayError("auth", "your session expired; sign in again")),
    };
    this.#settle(await shakeHands(this.#services, frame, conn), frame.id);
  }

  /** Acts on what the handshake decided, answering the hello's `requestId`. */
  #settle(outcome: HelloOutcome, requestId: RequestId | undefined): void {
    if (outcome.kind === "refused") return this.#refuse(outcome.error, outcome.close, requestId);
    if (outcome.kind === "failed") return this.#fail(outcome.what, outcome.error, requestId);
    // Gone, or closed since the handshake last looked (a revocation, the deadline): nothing to start.
    if (outcome.kind === "gone" || this.#isClosed()) return;
    try {
      this.#ready(outcome, requestId);
    } catch (error) {
      // A `connect` listener that throws fails the hello like the gateway's own failures do.
      this.#fail("hello failed", error, requestId);
    }
  }

  #ready({ auth, device, attached, helloOk }: HelloReady, requestId: RequestId | undefined): void {
    this.#services.options.clock.clearTimeout(this.#helloTimer);
    this.#helloTimer = undefined;
    this.#owner = auth.owner;
    this.#shares.owner = this.#services.budgets.framesPerOwner.join(auth.owner);
    this.#user = auth.user;
    this.#device = device;
    this.#state = "ready";
    this.send(helloOk, requestId);
    this.#delivery.start(attached.bounds.last, attached.held);
    this.#services.events.emit("connect", { owner: auth.owner, deviceId: device.device_id, connectionId: this.id });
    // Joining mid-flight: running answers, open asks and queues, live (docs/PROTOCOL.md §14.3).
    shareState(this.#services, auth.owner, this).catch((error) =>
      this.#services.log.warn("sending the shared state failed", error),
    );
  }

  /**
   * Subscribes this session to the owner's frames, then reads the cursor for `hello.ok`. The bus
   * subscription is active before the read starts, so a stored frame published before it was
   * committed before the read and is at or below the cursor (`sync` replays it); every later one
   * reaches this session, and is held here until `hello.ok` is out (`Delivery.start` lets them go;
   * on failure they are dropped, as the connection closes). Everything up to the first await runs
   * in the caller's synchronous step: `shakeHands` holds the hello's place under the per-owner
   * connection cap until this has attached, so parallel hellos cannot all pass the cap.
   */
  async #attach(owner: Owner): Promise<Attached> {
    const held = this.#delivery.hold();
    try {
      this.#attached = owner;
      this.#services.attach(owner, this);
      await this.#services.bus.ready?.(owner);
      return { bounds: await this.#services.storage.outboxBounds(owner), held };
    } catch (error) {
      this.#delivery.release();
      throw error;
    }
  }

  /** Re-reads the state after an await (TypeScript keeps the narrowing from before it). */
  #isClosed(): boolean {
    return this.#state === "closed";
  }

  /** Too many hellos in progress: `rate_limited`, then 1013 with when to come back (docs/PROTOCOL.md §18.5). */
  #shed(text: string): void {
    const ms = this.#pass.retryAfterMs();
    this.#services.traffic.hellosRefused++;
    const close = { code: CLOSE_CODES.tryAgainLater, reason: retryReason(ms) };
    this.#refuse(new GatewayError("rate_limited", `the server is busy; try again in ${ms} ms`), close, peekId(text));
  }

  #refuseBusy(message: string, requestId?: RequestId, reason = BUSY_CLOSE.reason): void {
    this.#refuse(new GatewayError("rate_limited", message), { code: BUSY_CLOSE.code, reason }, requestId);
  }

  #refuseAuth(error: GatewayError, requestId?: RequestId): void {
    this.#refuse(error, AUTH_CLOSE, requestId);
  }

  /** `error` with `error`, then the close the refusal calls for. */
  #refuse(error: GatewayError, close: CloseWith, requestId: RequestId | undefined): void {
    this.send({ type: "error", payload: toWireError(error) }, requestId);
    this.close(close.code, close.reason);
  }

  /** The gateway's side broke: logged, answered with the error, and the connection closed with 1011. */
  #fail(what: string, error: unknown, requestId: RequestId | undefined): void {
    this.#services.log.error(what, error);
    this.#sendError(error, requestId);
    this.close(1011, "internal error");
  }

  #sendError(error: unknown, requestId: RequestId | undefined): void {
    if (!isGatewayError(error)) {
      this.#services.log.error("request failed", error);
      this.#services.events.emit("error", error);
    }
    this.send({ type: "error", payload: toWireError(error) }, requestId);
  }

  /** From the bus. */
  deliver(frame: OutgoingFrame): void {
    this.#delivery.deliver(frame);
  }

  respond(frame: OutgoingFrame, requestId: RequestId | undefined): void {
    this.#delivery.respond(frame, requestId);
  }

  /** A frame replayed by sync: shaped for this device, never held back, skipped if it already went out live. */
  deliverReplay(frame: OutgoingFrame): void {
    this.#delivery.deliverReplay(frame);
  }

  /** The device record changed (fcm.register). */
  updateDevice(device: Device): void {
    this.#device = device;
  }

  /** Send a frame this connection built (a response, an error): only the protocol's frame types. */
  send(frame: ServerFrame, requestId?: RequestId): void {
    this.#delivery.send(frame, requestId);
  }

  sendBinary(data: Uint8Array): void {
    this.#delivery.sendBinary(data);
  }

  drained(): Promise<boolean> {
    return this.#delivery.drained();
  }

  replay(run: () => Promise<Seq>): Promise<void> {
    return this.#delivery.replay(run);
  }
}
