/**
 * Crash recovery (docs/PROTOCOL.md §4.2): answers left `streaming` by a process that died are
 * ended `interrupted` once their lane is free, then the waiting messages no job of this process
 * will reach are queued. Run at start and, with a lane lock, every `recoveryIntervalMs`.
 * @module
 */
import type { LaneLease } from "../contracts/lane-lock.js";
import type { ResolvedOptions } from "../options/options.js";
import type { StoredMessage } from "../contracts/records.js";
import type { Owner } from "../protocol/ids.js";
import { laneKey } from "../turn/lane-turn.js";
import { laneTaker } from "./scheduler.js";
import type { Lane, LaneFence } from "../contracts/storage.js";
import { endInterrupted, recoverWaiting, type AnswerWaiting, type QueueServices } from "./queue.js";
import { answerWaiting, type RunServices } from "./run.js";

/** A gateway's recovery: one pass at start, then (with a lane lock) one every `recoveryIntervalMs`. */
export interface TurnRecovery {
  /** One pass; a pass still running makes this one a no-op. */
  once(): Promise<void>;
  /** Start the repeated passes (with a lane lock only); returns what stops them. */
  repeat(): () => void;
}

/** The recovery of a gateway's lanes, answering the waiting messages it finds as `message.send` would. */
export function turnRecovery(
  services: RunServices & { readonly options: Pick<ResolvedOptions, "recoveryIntervalMs"> },
): TurnRecovery {
  let running = false;
  const once = async () => {
    if (running) return;
    running = true;
    try {
      await recoverTurns(services, answerWaiting(services));
    } finally {
      running = false;
    }
  };
  const repeat = () => {
    // With several processes, one that dies leaves turns that no job here will reach: look again
    // now and then. (One process alone finds everything at start.)
    if (!services.options.laneLock) return () => undefined;
    const { clock } = services.options;
    const timer = clock.setInterval(() => {
      once().catch((error) => services.log.warn("recovering interrupted turns failed", error));
    }, services.options.recoveryIntervalMs);
    return () => clock.clearInterval(timer);
  };
  return { once, repeat };
}

/** End every abandoned answer, then take up the waiting messages. */
export async function recoverTurns(services: QueueServices, answer: AnswerWaiting): Promise<void> {
  const open = await services.storage.unfinishedMessages();
  // Concurrently: a lane held by a live turn elsewhere costs its short lease wait, not the sum of all.
  await Promise.all(open.map(({ owner, message }) => recoverAbandoned(services, owner, message)));
  await recoverWaiting(services, answer);
}

/** End an answer left streaming, if its lane is free: a live turn of its own would hold it. */
async function recoverAbandoned(services: QueueServices, owner: Owner, message: StoredMessage): Promise<void> {
  const lane = { chat_id: message.chat_id, thread_id: message.thread_id };
  if (services.lanes.running(owner, lane)) return;
  const lease = await abandoned(services, owner, message);
  if (lease === false) return;
  try {
    // Taking the lane's token refuses every later write of a holder that only seemed dead (paused
    // past its lease): the answer is ended once, here (docs/PROTOCOL.md §4.2).
    const fence = await takeFence(services, owner, lane, lease);
    await endInterrupted(services, owner, message, fence);
  } catch (error) {
    services.log.warn("ending an interrupted answer failed", error);
  } finally {
    await lease?.release();
  }
}

/** The lane's new token once its lease is held, when the storage keeps tokens. */
async function takeFence(
  services: QueueServices,
  owner: Owner,
  lane: Lane,
  lease: LaneLease | undefined,
): Promise<LaneFence | undefined> {
  const take = laneTaker(services.storage, services.options.laneLock);
  if (!lease || !take) return undefined;
  const token = await take(owner, lane);
  return token === undefined ? undefined : { ...lane, token };
}

/**
 * With several processes, a streaming message may belong to a live turn elsewhere: only a lane
 * whose lease can be taken at once is really abandoned. One process alone recovers them all.
 */
async function abandoned(
  services: QueueServices,
  owner: Owner,
  message: StoredMessage,
): Promise<LaneLease | undefined | false> {
  const lock = services.options.laneLock;
  if (!lock) return undefined;
  try {
    return await lock.acquire(
      laneKey(owner, { chat_id: message.chat_id, thread_id: message.thread_id }),
      AbortSignal.timeout(200),
    );
  } catch {
    return false;
  }
}
