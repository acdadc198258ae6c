/**
 * Which connections of this process receive an owner's frames: one bus subscription per owner
 * with a connected device, shared by all of that owner's connections here.
 * @module
 */
import type { Bus, BusMessage, OutgoingFrame } from "../contracts/bus.js";
import type { ConnectionId, Owner, RequestId } from "../protocol/ids.js";

/** Bus frames between gateway processes start so; no device ever receives one. */
export const INTERNAL_PREFIX = "internal.";
/** A response, published by another process, for one connection of this one (`{connection_id, request_id?, frame}`). */
export const RESPOND_FRAME = "internal.respond";

/** A connection that receives its owner's frames. */
export interface Subscriber {
  readonly id: ConnectionId;
  /** Deliver a frame published for the owner. */
  deliver(frame: OutgoingFrame): void;
  /** Send a response frame with its request id (in publish order). */
  respond(frame: OutgoingFrame, requestId: RequestId | undefined): void;
}

interface OwnerSubscribers {
  subscribers: Set<Subscriber>;
  unsubscribe: () => void;
}

/** The owners served by this process and their connections. */
export class FanOut {
  readonly #bus: Bus;
  readonly #owners = new Map<Owner, OwnerSubscribers>();

  constructor(bus: Bus) {
    this.#bus = bus;
  }

  /** Start delivering the owner's frames to a connection. */
  readonly attach = (owner: Owner, subscriber: Subscriber): void => {
    let local = this.#owners.get(owner);
    if (!local) {
      const subscribers = new Set<Subscriber>();
      const unsubscribe = this.#bus.subscribe(owner, (message: BusMessage) => {
        const frame = message.frame;
        // Frames between gateway processes: only a response for one of these connections goes on.
        if (frame.type.startsWith(INTERNAL_PREFIX)) {
          if (frame.type !== RESPOND_FRAME) return;
          const {
            connection_id: id,
            request_id: requestId,
            frame: response,
          } = frame.payload as { connection_id: ConnectionId; request_id?: RequestId; frame: OutgoingFrame };
          for (const s of subscribers) if (s.id === id) s.respond(response, requestId);
          return;
        }
        for (const s of subscribers) if (s.id !== message.except) s.deliver(frame);
      });
      local = { subscribers, unsubscribe };
      this.#owners.set(owner, local);
    }
    local.subscribers.add(subscriber);
  };

  /** Stop delivering to a connection. */
  readonly detach = (owner: Owner, subscriber: Subscriber): void => {
    const local = this.#owners.get(owner);
    if (!local) return;
    local.subscribers.delete(subscriber);
    if (local.subscribers.size === 0) {
      local.unsubscribe();
      this.#owners.delete(owner);
    }
  };

  /** The owners with a connection in this process. */
  readonly owners = (): Iterable<Owner> => this.#owners.keys();

  /** How many of the owner's connections completed hello in this process. */
  readonly connectionCount = (owner: Owner): number => this.#owners.get(owner)?.subscribers.size ?? 0;
}
