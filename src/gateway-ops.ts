/**
 * Operating a gateway (docs/PROTOCOL.md §18): how it closes (and waits while it does), and what it
 * reports for metrics.
 * @module
 */
import type { TrafficCounts } from "./connection/traffic.js";
import type { Owner, Seq } from "./protocol/ids.js";
import type { SessionServices } from "./connection/session-services.js";
import { checkedNotification, type NotifyInput } from "./outbox/notification.js";
import type { Clock, ClockTimer } from "./support/clock.js";

/** How {@link Gateway.close} stops. */
export interface CloseOptions {
  /** Drain: let running turns finish for at most this many milliseconds, then close sockets with 1012. */
  drainMs?: number;
}

/** A gateway's load now, and its traffic since it was created ({@link Gateway.stats}). */
export interface GatewayStats {
  /** Open connections of this process, `hello` done or not. */
  connections: number;
  /** New connections waiting for room before they are taken ({@link Gateway.admitConnection}). */
  connectionsWaiting: number;
  /** Hellos that came while every place under `maxHellosInFlight` was taken, waiting for one (docs/PROTOCOL.md §18.5). */
  hellosWaiting: number;
  /** Turns running in this process. */
  turnsRunning: number;
  /** Turns waiting in this process for the turn before them in their lane. */
  turnsWaiting: number;
  /**
   * Handshakes that ended in `hello.ok`, ones refused (any error or close instead), and connections
   * shed before they were taken because too many hellos were in progress (docs/PROTOCOL.md §18.5).
   */
  hellos: { ok: number; refused: number; shed: number };
  /** Client frames that passed validation, by type. */
  framesReceived: Record<string, number>;
  /** Text frames written to sockets, by type. */
  framesSent: Record<string, number>;
}

/** A snapshot: later traffic does not change it. */
export function statsOf(
  connections: { open: number; waiting: number; hellosWaiting: number },
  turns: { running: number; waiting: number },
  traffic: TrafficCounts,
): GatewayStats {
  return {
    connections: connections.open,
    connectionsWaiting: connections.waiting,
    hellosWaiting: connections.hellosWaiting,
    turnsRunning: turns.running,
    turnsWaiting: turns.waiting,
    hellos: { ok: traffic.hellosOk, refused: traffic.hellosRefused, shed: traffic.hellosShed },
    framesReceived: Object.fromEntries(traffic.received),
    framesSent: Object.fromEntries(traffic.sent),
  };
}

/** Wait for `work`, at most `ms`; the timer never outlives the wait, so it holds no process open. */
export async function settleWithin(clock: Clock, work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ClockTimer | undefined;
  const timeout = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, ms)));
  try {
    await Promise.race([work, timeout]);
  } finally {
    clock.clearTimeout(timer);
  }
}

/** `gateway.notify`: stored and sent to every device of the owner, pushed when none is connected. */
export async function notifyOwner(services: SessionServices, owner: Owner, input: NotifyInput): Promise<Seq> {
  const notification = checkedNotification(input, services.now());
  const [frame] = await services.store(owner, {}, [{ type: "notification", payload: { ...notification } }]);
  services.pushIfAway(owner, {
    kind: "notification",
    title: input.title,
    body: input.body,
    notification_kind: input.kind,
    chat_id: input.chat_id,
    thread_id: input.thread_id,
    ...(input.message_id !== undefined ? { message_id: input.message_id } : {}),
  });
  return frame.seq!;
}
