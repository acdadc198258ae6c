/**
 * What a stored user message does next (docs/PROTOCOL.md §4, §14.4): `/stop` stops the lane's
 * turn; otherwise it waits in the lane's queue (`when_busy: "queue"`), stops the running turn and
 * runs next (`"interrupt"`), or is handed to the running turn (`"steer"`, on a runtime that can).
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { StoredMessage } from "../contracts/records.js";
import type { AgentRuntime } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneTurn } from "../turn/lane-turn.js";
import { stopTurn } from "./stop.js";
import { enqueueWaiting, keepsQueue, publishQueue, type AnswerWaiting, type QueueServices } from "./queue.js";

/** How a message sent while the lane's turn runs is taken (docs/PROTOCOL.md §14.4). */
export type WhenBusy = "queue" | "interrupt" | "steer";

/** What starting a turn uses: the queue, and the runtime that may take a steer. */
export interface StartServices extends QueueServices {
  readonly runtime: AgentRuntime;
}

/** Refuse, before anything is stored, a `when_busy` the runtime cannot honour. */
export function checkWhenBusy(services: StartServices, whenBusy: WhenBusy | undefined): void {
  if (whenBusy === "steer" && !services.runtime.steer)
    throw new GatewayError(
      "unsupported",
      `field "when_busy": this agent cannot be steered; send with "queue" or "interrupt"`,
    );
}

/**
 * How the message is stored: `steer` when it goes to the lane's running turn in this process
 * instead of a turn of its own, else whether it waits in the durable queue and jumps it.
 */
export function markForStart(
  services: StartServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  whenBusy: WhenBusy | undefined,
): { steer: LaneTurn | undefined } {
  const running = whenBusy === "steer" ? services.lanes.running(owner, lane) : undefined;
  if (running?.replyTo !== undefined && !running.controller.signal.aborted) return { steer: running };
  // Stored as waiting in the same commit as its echo: from then on a crash cannot lose its turn.
  if (keepsQueue(services)) message.waiting = true;
  if (whenBusy === "interrupt") message.interrupt = true;
  return { steer: undefined };
}

/** After the message is stored: hand it to the running turn, or queue its turn (stopping the running one first for `interrupt`). */
export async function startTurn(
  services: StartServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  steer: LaneTurn | undefined,
  answer: AnswerWaiting,
): Promise<void> {
  if (steer) {
    const taken = await Promise.resolve(
      services.runtime.steer!({
        owner,
        chat_id: lane.chat_id,
        thread_id: lane.thread_id,
        turn_message_id: steer.replyTo!,
        message: { message_id: message.message_id, text: message.text, media: message.media },
      }),
    ).catch((error) => {
      services.log.warn("the runtime's steer failed; the message waits for a turn of its own", error);
      return false;
    });
    if (taken) return;
    // The turn ended meanwhile, or would not take it: it gets a turn of its own, durably queued.
    if (keepsQueue(services)) await services.store(owner, { messages: [{ ...message, waiting: true }] }, []);
  }
  if (message.interrupt) await stopTurn(services, owner, lane);
  // It waits behind a turn of this process, or perhaps of another: the lane's queue grew. (In an
  // idle lane of a single process it runs at once, and the queue did not change.)
  const behind = services.lanes.running(owner, lane) !== undefined || services.options.laneLock !== undefined;
  enqueueWaiting(services, owner, lane, message, answer);
  if (behind) void publishQueue(services, owner, lane);
}
