/**
 * The conversation's shared state, the same on every device (docs/PROTOCOL.md §14): stopping a
 * lane's turn wherever it runs, the lane's queue as every device sees it (`lane.queue`), and what
 * a device joining mid-turn is sent after `hello.ok` and after `sync.done`.
 * @module
 */
import { openingFrames } from "../asks/ask-shapes.js";
import { isInProcessBus, type Bus, type OutgoingFrame } from "../contracts/bus.js";
import type { Lane } from "../contracts/storage.js";
import type { ConnectionId, MessageId, Owner } from "../protocol/ids.js";
import { laneTaker } from "../turn/lanes.js";
import { relayJoin, relayStop } from "../turn/turn-relay.js";
import { endInterrupted, keepsQueue, queueFrame, waitingByLane, type QueueServices } from "./turn-queue.js";

/** Where a joining device's frames go: shaped for its caps like any live frame. */
export interface JoinTarget {
  readonly id: ConnectionId;
  deliver(frame: OutgoingFrame): void;
}

function sharedBus(services: QueueServices): boolean {
  return !isInProcessBus(services.bus as Bus);
}

/** What a stop did: whether a turn was stopped, and its answer's id (null before the answer started). */
export interface StopResult {
  stopped: boolean;
  message_id: MessageId | null;
}

const NOTHING_STOPPED: StopResult = { stopped: false, message_id: null };

/**
 * Stop the lane's running turn, in this process or (through the bus) another: whether one was
 * running, and the id of its answer (null before the answer started). Open asks of the turn
 * resolve `cancelled` as it ends. A stop no process confirms in time fails closed
 * ({@link stopUnconfirmed}).
 */
export async function stopTurn(services: QueueServices, owner: Owner, lane: Lane): Promise<StopResult> {
  const answer = services.lanes.running(owner, lane)?.answer ?? null;
  if (services.lanes.stop(owner, lane)) return { stopped: true, message_id: answer };
  if (!sharedBus(services)) return NOTHING_STOPPED;
  const relayed = await relayStop(services.bus, owner, lane);
  return relayed.stopped ? relayed : stopUnconfirmed(services, owner, lane);
}

/**
 * No process confirmed the stop in time (its holder alive but slow, paused, or cut off from the
 * bus), yet an answer of the lane may still stream. Failing closed: the lane is taken in the
 * storage, so its holder's later writes are refused and its turn stops without a final of its own
 * (docs/PROTOCOL.md §4.2), and the answer is ended `stopped` here, once (docs/PROTOCOL.md §14.4).
 * Only with lane tokens: without them the holder could not be kept from writing on.
 */
async function stopUnconfirmed(services: QueueServices, owner: Owner, lane: Lane): Promise<StopResult> {
  const take = laneTaker(services.storage, services.options.laneLock);
  if (!take) return NOTHING_STOPPED;
  try {
    const open = (await services.storage.unfinishedMessages({ owner, ...lane })).filter(
      (m) => m.owner === owner && m.message.chat_id === lane.chat_id && m.message.thread_id === lane.thread_id,
    );
    if (open.length === 0) return NOTHING_STOPPED;
    await take(owner, lane);
    let stopped: MessageId | null = null;
    for (const { message } of open) {
      // Ended here, or by its holder's own stop that landed first (the late confirmation).
      const ended =
        (await endInterrupted(services, owner, message, undefined, "stopped")) ||
        (await services.storage.getMessage(owner, message.message_id))?.status === "stopped";
      if (ended) stopped = message.message_id;
    }
    if (stopped === null) return NOTHING_STOPPED;
    services.live(owner, { type: "typing", payload: { on: false, chat_id: lane.chat_id, thread_id: lane.thread_id } });
    return { stopped: true, message_id: stopped };
  } catch (error) {
    services.log.warn("stopping a turn no process confirmed failed", error);
    return NOTHING_STOPPED;
  }
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
