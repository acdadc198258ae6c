/**
 * Stopping a lane's turn wherever it runs (`/stop`, `turn.stop`; docs/PROTOCOL.md §14.4): in this
 * process, through the bus in another, or, when none confirms, by taking the lane in the storage.
 * @module
 */
import type { Lane } from "../contracts/storage.js";
import type { MessageId, Owner } from "../protocol/ids.js";
import { laneTaker } from "./scheduler.js";
import { relayStop } from "./relay.js";
import { sharedBus } from "./shared-state.js";
import { endInterrupted, type QueueServices } from "./queue.js";
import { reply, type RunServices } from "./run.js";
import type { StoredMessage } from "../contracts/records.js";

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
  const relayed = await relayStop(services.options.clock, services.bus, owner, lane);
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

/** `/stop` sent as a message: the lane's running turn, in this process or (through the bus) another; else the lane says so. */
export async function stopCommand(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
): Promise<void> {
  if ((await stopTurn(services, owner, lane)).stopped) return;
  services.lanes.enqueue(owner, lane, (turn) =>
    reply(services, owner, lane, message, turn, "Nothing is running here."),
  );
}
