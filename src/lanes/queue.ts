/**
 * The durable turn queue (docs/PROTOCOL.md §4.2): a user message whose answer has not ended is a
 * stored fact (`waiting`), not only a job in this process's memory. Whichever process holds a lane
 * answers the lane's waiting messages oldest first, ending first any answer a dead process left
 * streaming there; at start, and every `recoveryIntervalMs` with a lane lock, each process takes
 * up the lanes whose waiting messages no live job here will reach. Every acknowledged message gets
 * exactly one final answer: a job re-reads its message under the lane before it runs it, and the
 * commit that stores the answer's end clears the mark in the same atomic step.
 * @module
 */
import type { AskServices } from "../asks/ask-services.js";
import { interruptAsksOf } from "../asks/ask-answers.js";
import type { ServerFrame } from "../protocol/protocol.js";
import type { StoredMessage } from "../contracts/records.js";
import type { Lane, LaneFence } from "../contracts/storage.js";
import type { MessageId, Owner } from "../protocol/ids.js";
import { messagePayload, stopPayload } from "../outbox/message-payloads.js";
import type { StoredFrame } from "../protocol/protocol.js";
import { laneKey, type AbortReason, type LaneTurn } from "../turn/lane-turn.js";
import type { LaneScheduler } from "./scheduler.js";

/** What the queue reads and writes through. */
export interface QueueServices extends AskServices {
  readonly lanes: LaneScheduler;
}

/** Runs the turn of one waiting user message to its stored end (an agent turn or a command). */
export type AnswerWaiting = (owner: Owner, turn: LaneTurn, message: StoredMessage) => Promise<void>;

/** How many waiting messages one job answers at most before it lets the lane go. */
const MAX_SERVED = 1_000;

/** Waiting messages this process has a job for, by gateway: recovery leaves their lanes alone. */
const localTargets = new WeakMap<LaneScheduler, Set<MessageId>>();

function targetsOf(lanes: LaneScheduler): Set<MessageId> {
  let set = localTargets.get(lanes);
  if (!set) {
    set = new Set();
    localTargets.set(lanes, set);
  }
  return set;
}

/** The queue last sent for each lane by this gateway (ids joined), so an unchanged one is not sent again. */
const lastPublished = new WeakMap<LaneScheduler, Map<string, string>>();

function publishedOf(lanes: LaneScheduler): Map<string, string> {
  let map = lastPublished.get(lanes);
  if (!map) {
    map = new Map();
    lastPublished.set(lanes, map);
  }
  return map;
}

/** Whether the storage keeps the queue, so user messages are stored `waiting`. */
export function keepsQueue(services: Pick<QueueServices, "storage">): boolean {
  return services.storage.capabilities.waitingTurns;
}

function sameLane(m: StoredMessage, lane: Lane): boolean {
  return m.chat_id === lane.chat_id && m.thread_id === lane.thread_id;
}

/**
 * Queue the turn of a stored user message. Without the queue capability it simply runs; with it,
 * the job answers, once it holds the lane, every waiting message of the lane up to its own, oldest
 * first, and none that another process answered or a delete took away meanwhile. With `onlyIfFree`
 * (recovery), the job runs only on a lane no other process holds: a held lane is its holder's to
 * answer, and the message is looked at again in the next recovery round.
 */
export function enqueueWaiting(
  services: QueueServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  answer: AnswerWaiting,
  ended?: JobEnded,
  onlyIfFree = false,
): void {
  const front = message.interrupt === true;
  if (!keepsQueue(services)) {
    services.lanes.enqueue(owner, lane, (turn) => answer(owner, turn, message).finally(() => ended?.()), ended, front);
    return;
  }
  const targets = targetsOf(services.lanes);
  targets.add(message.message_id);
  const done = (reason?: AbortReason) => {
    targets.delete(message.message_id);
    ended?.(reason);
  };
  services.lanes.enqueue(
    owner,
    lane,
    (turn) => serve(services, owner, lane, message.message_id, turn, answer).finally(() => done()),
    done,
    front,
    onlyIfFree ? () => done() : undefined,
  );
}

/**
 * Told when a queued job is over: after it ran (whether or not it answered its own message: another
 * process may have), or with the reason it was dropped unrun.
 */
export type JobEnded = (dropped?: AbortReason) => void;

async function serve(
  services: QueueServices,
  owner: Owner,
  lane: Lane,
  target: MessageId,
  first: LaneTurn,
  answer: AnswerWaiting,
): Promise<void> {
  // Without a lane lock nothing says this gateway holds the lane alone (another gateway may share
  // the storage): it answers its own message only, in its own lane order.
  if (services.options.laneLock === undefined) return serveOwn(services, owner, lane, target, first, answer);
  let turn: LaneTurn | undefined = first;
  const served = new Set<MessageId>();
  while (served.size < MAX_SERVED && turn) {
    const own = await services.storage.getMessage(owner, target);
    // Answered by another process, or deleted while it waited: nothing to run.
    if (!own?.waiting) return;
    if (served.size === 0) await endAbandoned(services, owner, lane, turn);
    const waiting = (await services.storage.waitingTurns({ owner, ...lane }))
      .filter((w) => w.owner === owner && sameLane(w.message, lane))
      .map((w) => w.message);
    // Read after the abandoned answers ended: one of them may have been the answer to its own
    // message, which is then answered (interrupted) and not run a second time.
    const next = waiting.sort(queueOrder)[0];
    if (!next) return;
    // Its end could not be stored: leave it to the next job or restart rather than run it twice here.
    if (served.has(next.message_id)) return;
    if (served.size > 0) turn = services.lanes.renew(owner, lane);
    if (!turn || turn.controller.signal.aborted) return;
    served.add(next.message_id);
    await publishQueue(services, owner, lane, [next.message_id]);
    await answer(owner, turn, next);
    await publishQueue(services, owner, lane);
    if (next.message_id === target) return;
  }
}

/** No lane has a message waiting. */
const NO_LANES: ReadonlyMap<string, StoredMessage[]> = new Map();

/**
 * The waiting messages of each of the owner's lanes (of one lane with `lane`), oldest first, as
 * `lane.queue` lists them (docs/PROTOCOL.md §14.4): answers already streaming are not waiting, nor
 * the ids in `running`, nor a message sent with `when_busy: "interrupt"`, which takes the lane over
 * at once (it stops the running turn and is answered next), like the one being answered.
 */
export async function waitingByLane(
  services: QueueServices,
  owner: Owner,
  lane?: Lane,
  running: readonly MessageId[] = [],
): Promise<ReadonlyMap<string, StoredMessage[]>> {
  const scope = lane ? { owner, ...lane } : { owner };
  const waiting = await services.storage.waitingTurns(scope);
  // Nearly every device that joins finds nothing waiting: it costs one read, not two.
  if (waiting.length === 0) return NO_LANES;
  const streaming = await services.storage.unfinishedMessages(scope);
  const answered = new Set<string>(running);
  for (const { owner: of, message } of streaming) if (of === owner && message.reply_to) answered.add(message.reply_to);
  const byLane = new Map<string, StoredMessage[]>();
  for (const { owner: of, message } of waiting) {
    if (of !== owner || answered.has(message.message_id) || message.interrupt === true) continue;
    if (lane && (message.chat_id !== lane.chat_id || message.thread_id !== lane.thread_id)) continue;
    const key = laneKey(owner, message);
    byLane.set(key, [...(byLane.get(key) ?? []), message]);
  }
  for (const list of byLane.values()) list.sort(oldestFirst);
  return byLane;
}

export function queueFrame(lane: Lane, waiting: StoredMessage[]): ServerFrame {
  return {
    type: "lane.queue",
    payload: { chat_id: lane.chat_id, thread_id: lane.thread_id, message_ids: waiting.map((m) => m.message_id) },
  };
}

/**
 * Tell every device of the owner the lane's queue as it now stands (`lane.queue`, live). `running`:
 * messages whose turn is starting, no longer waiting. Only on a storage that keeps the queue.
 */
export async function publishQueue(
  services: QueueServices,
  owner: Owner,
  lane: Lane,
  running: readonly MessageId[] = [],
): Promise<void> {
  if (!keepsQueue(services)) return;
  try {
    const key = laneKey(owner, lane);
    const waiting = (await waitingByLane(services, owner, lane, running)).get(key) ?? [];
    // Only a change is news: a message that runs at once leaves the (empty) list as it was.
    const ids = waiting.map((m) => m.message_id).join(",");
    const published = publishedOf(services.lanes);
    if ((published.get(key) ?? "") === ids) return;
    if (ids === "") published.delete(key);
    else published.set(key, ids);
    services.live(owner, queueFrame(lane, waiting));
  } catch (error) {
    services.log.warn("reading the lane's queue failed", error);
  }
}

/** Lane order: a message sent with `when_busy: "interrupt"` first, then oldest first. */
export function queueOrder(a: StoredMessage, b: StoredMessage): number {
  return Number(b.interrupt === true) - Number(a.interrupt === true) || oldestFirst(a, b);
}

/** By time, then by id where times tie. */
function oldestFirst(a: StoredMessage, b: StoredMessage): number {
  return a.ts - b.ts || (a.message_id < b.message_id ? -1 : a.message_id > b.message_id ? 1 : 0);
}

/** The job's own message only, if it still waits (not deleted meanwhile, not answered by a restart's recovery). */
async function serveOwn(
  services: QueueServices,
  owner: Owner,
  lane: Lane,
  target: MessageId,
  turn: LaneTurn,
  answer: AnswerWaiting,
): Promise<void> {
  const own = await services.storage.getMessage(owner, target);
  if (!own?.waiting || turn.controller.signal.aborted) return;
  await publishQueue(services, owner, lane, [target]);
  await answer(owner, turn, own);
  await publishQueue(services, owner, lane);
}

/**
 * End the answers a crashed or dead process left streaming in a lane this job holds (under the
 * lane lock, so no live turn of any process writes there): each becomes
 * `interrupted` (its final frame stored once) and its user message leaves the queue.
 */
async function endAbandoned(services: QueueServices, owner: Owner, lane: Lane, turn: LaneTurn): Promise<void> {
  for (const { owner: of, message } of await services.storage.unfinishedMessages({ owner, ...lane })) {
    if (of === owner && sameLane(message, lane)) await endInterrupted(services, owner, message, turn.fence);
  }
}

/** The text of an answer ended elsewhere than in its turn, when it had none yet. */
const ENDED_NOTE = {
  interrupted: "(interrupted: the gateway restarted)",
  stopped: "(stopped)",
} as const;

/**
 * Store the end of an answer whose turn is not there to end it: `interrupted` when it died with its
 * process, `stopped` when a stop its process did not confirm ended it (docs/PROTOCOL.md §14.4).
 * The final frame is the one the gateway's streaming option calls for, its user message answered,
 * its open asks interrupted. Does nothing when the message is gone or no longer streaming, also
 * when that changes meanwhile (`requireStreaming`), nor when `fence` (the lane token this process
 * took) is no longer the lane's. True when this call stored the end.
 */
export async function endInterrupted(
  services: AskServices,
  owner: Owner,
  message: StoredMessage,
  fence?: LaneFence,
  status: keyof typeof ENDED_NOTE = "interrupted",
): Promise<boolean> {
  const current = await services.storage.getMessage(owner, message.message_id);
  if (current?.status !== "streaming") return false;
  const ended: StoredMessage = { ...current, status, text: current.text || ENDED_NOTE[status] };
  // The footer keeps what is known of the answer: at least its model.
  ended.runtime = current.runtime ?? (current.model !== undefined ? { model: current.model } : {});
  const final: StoredFrame = services.options.streaming
    ? { type: "message.stop", payload: stopPayload(ended) }
    : { type: "message", payload: messagePayload(ended) };
  // Deleted since it was read: closing it must not bring it back. Ended since it was read (by its
  // own turn, or another process's recovery): a second final is refused.
  const stored = await services.store(
    owner,
    {
      messages: [ended],
      requireMessages: [ended.message_id],
      requireStreaming: [ended.message_id],
      ...(ended.reply_to ? { answered: [ended.reply_to] } : {}),
      ...(fence ? { fence } : {}),
    },
    [final],
  );
  if (stored.length === 0) return false;
  await interruptAsksOf(services, owner, ended.message_id);
  return true;
}

/**
 * Take up the waiting messages that no job of this process will reach (after a restart, or a dead
 * process's), in lane order (docs/PROTOCOL.md §4.2). With a lane lock, one job per lane, aimed at
 * the message the lane answers last, which answers every waiting message before it: a long queue
 * costs the owner one turn of its bound (`maxTurnsPerOwner`), and a lane whose last message a job
 * here already reaches is left to that job. Without one, a job answers its own message only
 * (`serveOwn`), so each waiting message gets its own.
 */
export async function recoverWaiting(services: QueueServices, answer: AnswerWaiting): Promise<void> {
  if (!keepsQueue(services)) return;
  const byLane = new Map<string, Array<{ owner: Owner; message: StoredMessage }>>();
  for (const entry of await services.storage.waitingTurns()) {
    const key = laneKey(entry.owner, entry.message);
    byLane.set(key, [...(byLane.get(key) ?? []), entry]);
  }
  const targets = targetsOf(services.lanes);
  const shared = services.options.laneLock !== undefined;
  for (const entries of byLane.values()) {
    entries.sort((a, b) => queueOrder(a.message, b.message));
    for (const { owner, message } of shared ? entries.slice(-1) : entries) {
      if (targets.has(message.message_id)) continue;
      // Behind this process's own jobs of the lane, never ahead of them (no `interrupt` jump), and
      // only on a free lane: waiting behind a live holder would make this process a party to the
      // owner's turns (their relays, their frames) with no device of the owner here.
      enqueueWaiting(
        services,
        owner,
        { chat_id: message.chat_id, thread_id: message.thread_id },
        { ...message, interrupt: undefined },
        answer,
        undefined,
        true,
      );
    }
  }
}
