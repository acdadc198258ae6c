/**
 * What a connection sends, under the slow-consumer policy: past the soft limit a device gets only
 * the latest `message.update` of each message and long replies wait; past the hard limit (every
 * byte queued, text and binary) the connection is closed 1013 so memory stays bounded. A device
 * that takes delta updates gets each `message.update` as appends to what it holds, worked out
 * when the update is written (docs/PROTOCOL.md §12).
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { Connection } from "../contracts/connection.js";
import { encodeWithin } from "./wire.js";
import { HeldTexts } from "./held-texts.js";
import { countFrame } from "./traffic.js";
import type { ResolvedOptions } from "../options/options.js";
import { sleep, type Clock, type ClockTimer } from "../support/clock.js";

/** How often a held-back update or a waiting reply looks at the socket's buffer again (milliseconds). */
const DRAIN_POLL_MS = 25;

/**
 * A delta device's update that would carry fewer characters than its envelope waits for more
 * text, up to this many `deltaIntervalMs` after the update before it (docs/PROTOCOL.md §12).
 */
const THIN_HOLD_INTERVALS = 3;

/** How a connection paces what it sends. */
export interface OutflowLimits {
  softBytes: number;
  hardBytes: number;
  /** At most one `message.update` per this many milliseconds to a delta device (docs/PROTOCOL.md §12). */
  deltaIntervalMs: number;
  /** `max_frame_bytes`: a stored answer over it has its tool calls cut to fit (docs/PROTOCOL.md §5). */
  maxFrameBytes: number;
  /** The gateway's clock: the delta pace and the waits for the socket's buffer run on it. */
  clock: Clock;
}

/** The send limits of a gateway: one object for all its connections rather than one each. */
const limitsOf = new WeakMap<ResolvedOptions, OutflowLimits>();
export function outflowLimits(options: ResolvedOptions): OutflowLimits {
  let limits = limitsOf.get(options);
  if (!limits) {
    limits = {
      ...options.backpressure,
      deltaIntervalMs: options.deltaUpdateIntervalMs,
      maxFrameBytes: options.maxFrameBytes,
      clock: options.clock,
    };
    limitsOf.set(options, limits);
  }
  return limits;
}

/** The send side of one connection. */
export class Outflow {
  readonly #conn: Connection;
  readonly #limits: OutflowLimits;
  /** Told once when the hard limit is passed: the owner closes the connection with 1013. */
  readonly #overflow: { tooSlow(): void };
  /** Updates held back, by message id; made at the first one (an idle connection never needs it). */
  #pendingUpdates: Map<string, OutgoingFrame> | undefined;
  #drainTimer: ClockTimer | undefined;
  #stopped = false;
  /** Set for a device with `caps.delta`. */
  #held: HeldTexts | undefined;
  /** For a delta device: when its last `message.update` was written (clock time). */
  #lastDeltaAt = Number.NEGATIVE_INFINITY;

  /** Frames written, by type (docs/PROTOCOL.md §18.3). */
  readonly #sent: Map<string, number> | undefined;

  constructor(conn: Connection, limits: OutflowLimits, overflow: { tooSlow(): void }, sent?: Map<string, number>) {
    this.#conn = conn;
    this.#limits = limits;
    this.#overflow = overflow;
    this.#sent = sent;
  }

  /** From now on `message.update`s go out as appends to what the device holds (`caps.delta`). */
  sendDeltas(): void {
    this.#held ??= new HeldTexts();
  }

  /** False once the hard limit was passed (the frame is not sent) or the connection ended. */
  #room(): boolean {
    if (this.#stopped) return false;
    if (this.#conn.bufferedAmount <= this.#limits.hardBytes) return true;
    this.stop();
    this.#overflow.tooSlow();
    return false;
  }

  /**
   * Send one frame; `message.update`s wait while the buffer is past the soft limit, or for a delta
   * device until its pace allows the next one (latest wins).
   */
  send(frame: OutgoingFrame, requestId: string | undefined): void {
    if (!this.#room()) return;
    if (frame.type === "message.update") {
      const messageId = frame.payload.message_id as string;
      const paced = this.#deltaWait(frame);
      const full = this.#conn.bufferedAmount > this.#limits.softBytes;
      if (full || (this.#pendingUpdates?.size ?? 0) > 0 || paced > 0) {
        // Latest wins: the turn's update carries the whole text, so older pending ones are
        // worthless; a delta device's appends are taken from it when it is written.
        this.#pendingUpdates ??= new Map();
        this.#pendingUpdates.set(messageId, frame);
        // Held for the delta pace only, and now worth writing: no need to wait for the timer.
        if (!full && paced <= 0 && this.#held !== undefined) return this.#flush();
        this.#scheduleDrain(paced > 0 ? paced : DRAIN_POLL_MS);
        return;
      }
    } else if (this.#pendingUpdates !== undefined) this.#before(frame);
    this.#write(frame, requestId);
  }

  /**
   * Before `frame`, which is no update, while updates are held: those it ends are dropped, and
   * the others go first unless the socket is past the soft limit. Held back only for a delta
   * device's pace, an update would otherwise reach the device after the frames that followed it:
   * a joining device got the running answer's text after the asks and `lane.queue`
   * (docs/PROTOCOL.md §14.3).
   */
  #before(frame: OutgoingFrame): void {
    const pending = this.#pendingUpdates!;
    if (frame.type === "message.stop" || frame.type === "message") {
      pending.delete(frame.payload.message_id as string);
    } else if (frame.type === "message.deleted" && Array.isArray(frame.payload.message_ids)) {
      // A held update written after the delete would re-create the message (docs/PROTOCOL.md §4.5).
      for (const id of frame.payload.message_ids) pending.delete(id as string);
    }
    if (this.#conn.bufferedAmount > this.#limits.softBytes) return;
    this.#pendingUpdates = undefined;
    for (const update of pending.values()) this.#write(update);
  }

  /** Onto the socket; for a delta device, an update becomes the appends to what it holds. */
  #write(frame: OutgoingFrame, requestId?: string): void {
    const held = this.#held;
    if (held !== undefined) {
      const p = frame.payload;
      if (frame.type === "message.update") {
        frame = held.shape(frame);
        this.#lastDeltaAt = this.#limits.clock.now();
      } else if (frame.type === "message.start") held.started(p.message_id as string);
      else if (frame.type === "message.stop" || frame.type === "message") held.ended(p.message_id as string);
      else if (frame.type === "message.deleted" && Array.isArray(p.message_ids))
        for (const id of p.message_ids) held.ended(id as string);
    }
    this.#conn.send(encodeWithin(frame, this.#limits.maxFrameBytes, requestId));
    if (this.#sent !== undefined) countFrame(this.#sent, frame.type);
  }

  /** Send a binary message (a media chunk); counts against the same hard limit as text. */
  sendBinary(data: Uint8Array): void {
    if (this.#room()) this.#conn.sendBinary(data);
  }

  /** Resolves true once the buffer is below the soft limit, false if the connection ended first. */
  async drained(): Promise<boolean> {
    while (this.#room()) {
      if (this.#conn.bufferedAmount <= this.#limits.softBytes) return true;
      await sleep(this.#limits.clock, DRAIN_POLL_MS);
    }
    return false;
  }

  /** The connection ended: drop held-back updates and stop sending. */
  stop(): void {
    this.#stopped = true;
    this.#pendingUpdates = undefined;
    if (this.#drainTimer) this.#limits.clock.clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
  }

  /**
   * Milliseconds until a delta device may get `update`: at a model's pace an update's envelope
   * outweighs 50 ms of text, so a delta device gets fewer, longer appends, one per interval at
   * most and, while they would be thinner than their envelope, one per three intervals (0 for a
   * full-text device).
   */
  #deltaWait(update: OutgoingFrame): number {
    if (this.#held === undefined) return 0;
    const now = this.#limits.clock.now();
    const interval = this.#limits.deltaIntervalMs;
    const paced = this.#lastDeltaAt + interval - now;
    if (paced > 0 || !this.#held.thin(update)) return paced;
    return this.#lastDeltaAt + interval * THIN_HOLD_INTERVALS - now;
  }

  /** Write every held-back update now. */
  #flush(): void {
    if (this.#drainTimer) this.#limits.clock.clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    const pending = [...(this.#pendingUpdates?.values() ?? [])];
    this.#pendingUpdates = undefined;
    for (const frame of pending) this.#write(frame);
  }

  #scheduleDrain(delayMs: number): void {
    if (this.#drainTimer) return;
    this.#drainTimer = this.#limits.clock.setTimeout(() => {
      this.#drainTimer = undefined;
      if (!this.#room()) return;
      if (this.#conn.bufferedAmount > this.#limits.softBytes) return this.#scheduleDrain(DRAIN_POLL_MS);
      let paced = Number.POSITIVE_INFINITY;
      for (const frame of this.#pendingUpdates?.values() ?? []) paced = Math.min(paced, this.#deltaWait(frame));
      if (paced > 0 && paced !== Number.POSITIVE_INFINITY) return this.#scheduleDrain(paced);
      this.#flush();
    }, delayMs);
  }
}
