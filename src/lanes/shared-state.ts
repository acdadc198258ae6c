/**
 * The conversation's shared state, the same on every device (docs/PROTOCOL.md §14): the lane's
 * queue as every device sees it (`lane.queue`), and what a device joining mid-turn is sent after
 * `hello.ok` and after `sync.done`.
 * @module
 */
import { openingFrames } from "../asks/ask-shapes.js";
import { isInProcessBus, type Bus, type OutgoingFrame } from "../contracts/bus.js";
import type { ConnectionId, Owner } from "../protocol/ids.js";
import { relayJoin } from "./relay.js";
import { keepsQueue, queueFrame, waitingByLane, type QueueServices } from "./queue.js";

/** Where a joining device's frames go: shaped for its caps like any live frame. */
export interface JoinTarget {
  readonly id: ConnectionId;
  deliver(frame: OutgoingFrame): void;
}

/** True when other processes share the bus: a stop or a join is relayed to them. */
export function sharedBus(services: QueueServices): boolean {
  return !isInProcessBus(services.bus as Bus);
}

/** The frames of the owner's turns running in this process and of the asks it holds. */
export function localTurnFrames(services: QueueServices, owner: Owner): OutgoingFrame[] {
  const frames: OutgoingFrame[] = [];
  for (const turn of services.lanes.runningOf(owner)) frames.push(...(turn.snapshot?.() ?? []));
  for (const ask of services.asks.ofOwner(owner)) frames.push(...openingFrames(ask.spec, ask.opened));
  return frames;
}

/**
 * Send a device that just joined (after `hello.ok`, and after `sync.done`) what it needs to see and
 * finish everything the others can: every running answer with its running tools, every open ask,
 * then `lane.queue` for every lane with waiting messages (docs/PROTOCOL.md §14.3).
 */
export async function shareState(services: QueueServices, owner: Owner, target: JoinTarget): Promise<void> {
  for (const frame of localTurnFrames(services, owner)) target.deliver(frame);
  if (sharedBus(services)) relayJoin(services.bus, owner, target.id);
  if (!keepsQueue(services)) return;
  try {
    for (const waiting of (await waitingByLane(services, owner)).values())
      target.deliver(queueFrame(waiting[0], waiting));
  } catch (error) {
    services.log.warn("reading the owner's queues failed", error);
  }
}
