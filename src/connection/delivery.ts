/**
 * What one connection receives of its owner's frames: live ones from the bus, the responses it
 * caused, and the ones `sync` replays, each seq once and in order (see `frame-order.ts`),
 * shaped for the device's caps and sent under the slow-consumer policy (`outflow.ts`).
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { Connection } from "../contracts/connection.js";
import type { DeviceCaps } from "../contracts/records.js";
import type { RequestId, Seq } from "../protocol/ids.js";
import { FrameOrder } from "./frame-order.js";
import { AnswerGuard } from "./answer-guard.js";
import type { ServerFrame } from "../protocol/protocol.js";
import { PICKER_FRAME_TYPES } from "../protocol/server-frames.js";
import { stopAsMessage } from "./wire.js";
import { Outflow, type OutflowLimits } from "./outflow.js";

/** The connection a {@link Delivery} serves: its device's current caps, and what to do when it is too slow. */
export interface DeliveryHost {
  /** Undefined before `hello`. */
  readonly deviceCaps: DeviceCaps | undefined;
  /** Past the hard limit: close the connection (1013). */
  tooSlow(): void;
}

/** The receiving side of one connection. */
export class Delivery {
  readonly #order = new FrameOrder();
  readonly #guard = new AnswerGuard();
  readonly #outflow: Outflow;
  readonly #host: DeliveryHost;
  /** Live frames go out only once `hello.ok` is out; before that they are stale by the time it is. */
  #live = false;
  #stopped = false;

  /** `host` gives the device's caps and closes the connection when it is too slow; `sent` counts frames by type. */
  constructor(conn: Connection, limits: OutflowLimits, host: DeliveryHost, sent?: Map<string, number>) {
    this.#outflow = new Outflow(conn, limits, host, sent);
    this.#host = host;
  }

  /**
   * From now until {@link release} or {@link start}, live stored frames collect in the returned list (hello.ok's
   * cursor is being read).
   */
  hold(): OutgoingFrame[] {
    return this.#order.hold();
  }

  release(): void {
    this.#order.release();
  }

  /** `hello.ok` went out with `cursor`: the hold ends, and live delivery starts with the frames it kept. */
  start(cursor: Seq, held: OutgoingFrame[]): void {
    this.#order.release();
    this.#live = true;
    // caps.delta: from here updates go out as appends to what the device holds (docs/PROTOCOL.md §12).
    if (this.#host.deviceCaps?.delta) this.#outflow.sendDeltas();
    this.#order.start(cursor);
    for (const frame of held) this.deliver(frame);
  }

  /** A frame from the bus. */
  deliver(frame: OutgoingFrame): void {
    if (this.#stopped || this.#order.absorbs(frame) || !this.#live || this.#guard.refuses(frame)) return;
    this.#order.sentLive(frame);
    this.#sendShaped(frame, undefined);
  }

  /** A stored frame answering this connection's request, in publish order. */
  respond(frame: OutgoingFrame, requestId: RequestId | undefined): void {
    // A response to a request goes out whatever went before: the device waits for its id (a
    // retried `message.send` is answered with the stored echo, seq and all, docs/PROTOCOL.md §4.1).
    if (this.#order.holds(frame, requestId) || (requestId === undefined && this.#guard.refuses(frame))) return;
    this.#order.sentLive(frame);
    this.#sendShaped(frame, requestId);
  }

  /** A frame replayed by sync: shaped for this device, never held back, skipped if it already went out live. */
  deliverReplay(frame: OutgoingFrame): void {
    if (this.#order.sentAlready(frame)) return;
    this.#sendShaped(frame, undefined);
  }

  /** Runs a sync's replay while live stored frames are held back; those past it follow. */
  replay(run: () => Promise<Seq>): Promise<void> {
    return this.#order.replay(run, (frame) => this.deliverReplay(frame));
  }

  /** A frame this connection built (a response, an error): only the protocol's frame types. */
  send(frame: ServerFrame, requestId?: RequestId): void {
    this.#write(frame, requestId);
  }

  sendBinary(data: Uint8Array): void {
    if (!this.#stopped) this.#outflow.sendBinary(data);
  }

  /** Resolves once the socket's buffer is below the soft limit; false once the connection ended. */
  drained(): Promise<boolean> {
    return this.#outflow.drained();
  }

  /** The connection ended: nothing more is sent. */
  stop(): void {
    this.#stopped = true;
    this.#outflow.stop();
  }

  /** Send with the device's caps applied: streaming off, media off. */
  #sendShaped(frame: OutgoingFrame, requestId: RequestId | undefined): void {
    this.#guard.sent(frame);
    const caps = this.#host.deviceCaps;
    if (caps && !caps.streaming) {
      if (frame.type === "message.start" || frame.type === "message.update") return;
      if (frame.type === "message.stop") frame = stopAsMessage(frame);
    }
    if (caps && !caps.media && frame.type === "media.offer") return;
    // Asks (docs/PROTOCOL.md §11): cards for devices that show them, the notification for the rest.
    // A response still reaches the device that asked for it.
    if (PICKER_FRAME_TYPES.has(frame.type) && !caps?.pickers && requestId === undefined) return;
    if (caps?.pickers && frame.type === "notification" && typeof frame.payload.picker_id === "string") return;
    this.#write(frame, requestId);
  }

  #write(frame: OutgoingFrame, requestId?: RequestId): void {
    if (!this.#stopped) this.#outflow.send(frame, requestId);
  }
}
