/**
 * `/stop` in every process (docs/PROTOCOL.md §4.4): a stop that reaches a process which does not
 * run the lane's turn travels on the Bus to the one that does. Each process listens for an
 * owner's stops while it has turns of that owner queued or running, and acknowledges the stops it
 * carried out, so the sender knows whether anything was running.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Bus } from "../contracts/bus.js";
import type { Lane } from "../contracts/storage.js";
import type { Owner } from "../ids.js";
import { INTERNAL_PREFIX } from "../outbox/fan-out.js";
import type { LaneScheduler } from "./lanes.js";

/** Bus frames between gateway processes (`INTERNAL_PREFIX`); never delivered to a device. */
const STOP_FRAME = `${INTERNAL_PREFIX}stop`;
const STOPPED_FRAME = `${INTERNAL_PREFIX}stop.ack`;

/** How long a relayed stop waits for the process running the turn (ms). */
const ACK_WAIT_MS = 1_500;

/** Carry out the stops other processes relay for the owners whose turns run here. */
export function listenForStops(bus: Pick<Bus, "publish" | "subscribe">, lanes: LaneScheduler): void {
  const listening = new Map<Owner, () => void>();
  lanes.onOwner = (owner, active) => {
    if (!active) {
      listening.get(owner)?.();
      listening.delete(owner);
      return;
    }
    if (listening.has(owner)) return;
    listening.set(
      owner,
      bus.subscribe(owner, (message) => {
        if (message.frame.type !== STOP_FRAME) return;
        const { chat_id, thread_id, token } = message.frame.payload as unknown as Lane & { token: string };
        if (lanes.abort(owner, { chat_id, thread_id }, "stop")) bus.publish({ owner, frame: { type: STOPPED_FRAME, payload: { token } } });
      }),
    );
  };
}

/** Ask every other process to stop the lane's running turn; true when one did. */
export async function relayStop(bus: Pick<Bus, "publish" | "subscribe" | "ready">, owner: Owner, lane: Lane): Promise<boolean> {
  const token = randomUUID();
  let unsubscribe: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<boolean>((resolve) => {
      unsubscribe = bus.subscribe(owner, (message) => {
        if (message.frame.type === STOPPED_FRAME && message.frame.payload.token === token) resolve(true);
      });
      timer = setTimeout(() => resolve(false), ACK_WAIT_MS);
      void Promise.resolve(bus.ready?.(owner)).then(() => bus.publish({ owner, frame: { type: STOP_FRAME, payload: { chat_id: lane.chat_id, thread_id: lane.thread_id, token } } }));
    });
  } finally {
    clearTimeout(timer);
    unsubscribe?.();
  }
}
