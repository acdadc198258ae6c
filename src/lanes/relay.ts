/**
 * A lane's turn seen from every process: `/stop` and `turn.stop` (docs/PROTOCOL.md §4.4, §14.4)
 * that reach a process which does not run the lane's turn travel on the Bus to the one that does,
 * which acknowledges the stops it carried out with the stopped answer's id; and a device joining
 * mid-turn (docs/PROTOCOL.md §14.3) on one process is sent, by every other process, the
 * frames of the owner's turns running there. Each process listens for an owner while a turn of
 * that owner holds its lane there: a turn still waiting for a lane another process holds hears
 * nothing, so a process with no device of the owner reads none of the owner's frames meanwhile.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Bus } from "../contracts/bus.js";
import type { Lane } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import { randomUUID as processToken } from "node:crypto";
import type { OutgoingFrame } from "../contracts/bus.js";
import { INTERNAL_PREFIX, RESPOND_FRAME } from "../outbox/fan-out.js";
import { ownerSubscriptions } from "../outbox/owner-subscriptions.js";
import type { LaneScheduler } from "./scheduler.js";
import type { Clock, ClockTimer } from "../support/clock.js";

/** Bus frames between gateway processes (`INTERNAL_PREFIX`); never delivered to a device. */
const STOP_FRAME = `${INTERNAL_PREFIX}stop`;
const STOPPED_FRAME = `${INTERNAL_PREFIX}stop.ack`;
const JOIN_FRAME = `${INTERNAL_PREFIX}join`;

/** This process, so it does not answer its own join requests. */
const SELF = processToken();

/** How long a relayed stop waits for the process running the turn (ms). */
const ACK_WAIT_MS = 1_500;

/**
 * Carry out the stops other processes relay for the owners whose turns run here, and send a
 * joining device of another process the frames `snapshot` gives for the owner.
 */
export function listenForTurns(
  bus: Pick<Bus, "publish" | "subscribe" | "ready">,
  lanes: LaneScheduler,
  snapshot: (owner: Owner) => OutgoingFrame[],
): void {
  const subscriptions = ownerSubscriptions(bus, (owner, message) => {
    const { type, payload } = message.frame;
    if (type === STOP_FRAME) {
      const { chat_id, thread_id, token } = payload as unknown as Lane & { token: string };
      const answer = lanes.running(owner, { chat_id, thread_id })?.answer ?? null;
      if (lanes.stop(owner, { chat_id, thread_id }))
        bus.publish({ owner, frame: { type: STOPPED_FRAME, payload: { token, message_id: answer } } });
    } else if (type === JOIN_FRAME && payload.from !== SELF) {
      for (const frame of snapshot(owner))
        bus.publish({
          owner,
          frame: { type: RESPOND_FRAME, payload: { connection_id: payload.connection_id, frame } },
        });
    }
  });
  // A bus whose link is down resolves `ready` late or fails it: the subscription stands either way.
  lanes.onOwner = (owner, active) => subscriptions(owner, active).catch(() => undefined);
}

/** Ask every other process to send a joining connection the frames of the owner's turns running there. */
export function relayJoin(bus: Pick<Bus, "publish">, owner: Owner, connectionId: string): void {
  bus.publish({ owner, frame: { type: JOIN_FRAME, payload: { connection_id: connectionId, from: SELF } } });
}

/** Ask every other process to stop the lane's running turn; whether one did, and the id of the answer it stopped. */
export async function relayStop(
  clock: Clock,
  bus: Pick<Bus, "publish" | "subscribe" | "ready">,
  owner: Owner,
  lane: Lane,
): Promise<{ stopped: boolean; message_id: string | null }> {
  const token = randomUUID();
  let unsubscribe: (() => void) | undefined;
  let timer: ClockTimer | undefined;
  try {
    return await new Promise((resolve) => {
      unsubscribe = bus.subscribe(owner, (message) => {
        const { type, payload } = message.frame;
        if (type === STOPPED_FRAME && payload.token === token)
          resolve({ stopped: true, message_id: (payload.message_id as string | null) ?? null });
      });
      timer = clock.setTimeout(() => resolve({ stopped: false, message_id: null }), ACK_WAIT_MS);
      void Promise.resolve(bus.ready?.(owner)).then(() =>
        bus.publish({
          owner,
          frame: { type: STOP_FRAME, payload: { chat_id: lane.chat_id, thread_id: lane.thread_id, token } },
        }),
      );
    });
  } finally {
    clock.clearTimeout(timer);
    unsubscribe?.();
  }
}
