/**
 * The `Bus` contract: fan-out of frames to an owner's connections, across gateway processes.
 * @module
 */
import { EventEmitter } from "eventemitter3";
import type { ConnectionId, Owner, Seq } from "../protocol/ids.js";

/** A gateway → client frame as the gateway builds it (never validated again on the way out). */
export interface OutgoingFrame {
  type: string;
  payload: Record<string, unknown>;
  /** Set on frames stored in the outbox. */
  seq?: Seq;
  /**
   * On a `message.update` for a device joining mid-turn (docs/PROTOCOL.md §14.3): it carries the
   * whole text also to a `caps.delta` device, replacing what it holds. Never on the wire.
   */
  whole?: true;
}

/** One frame for one owner's devices. */
export interface BusMessage {
  owner: Owner;
  frame: OutgoingFrame;
  /**
   * A connection id that must not get this frame (the sender, which got the response with its id).
   * Connection ids are unique across processes, so a remote subscriber may compare them too.
   */
  except?: ConnectionId;
}

/**
 * Carries frames to every connection of an owner, wherever it is connected.
 *
 * Guarantees an implementation must give: frames published for one owner reach each subscriber
 * in the order they were published; a subscriber in the publishing process gets them even when a
 * remote link is down (its devices catch up on the rest through `sync`). Delivery to other
 * processes is best-effort: durable frames are in the outbox anyway.
 */
export interface Bus {
  /** Send a frame to every subscriber of `message.owner`, in every process. */
  publish(message: BusMessage): void;
  /** Receive the frames of one owner. Returns the function that unsubscribes. */
  subscribe(owner: Owner, listener: (message: BusMessage) => void): () => void;
  /**
   * Resolves once frames published for `owner` from now on, in any process, reach this process's
   * subscribers (optional; without it, subscribing takes effect at once). A bus that subscribes
   * per owner over a network implements it; the gateway awaits it after subscribing a device and
   * before reading the cursor it sends in `hello.ok`, so no stored frame falls between the two.
   * It should not wait long: while the link is down, resolve and let the catch-up cover the gap.
   */
  ready?(owner: Owner): Promise<void>;
  /**
   * Whether the owner has a connected device in any process (optional). Used to push only to
   * owners who are away everywhere; without it, the gateway knows only its own connections.
   */
  connected?(owner: Owner): Promise<boolean>;
  /** Release connections to other processes. */
  close?(): Promise<void>;
}

/** Buses made by {@link memoryBus}: they reach this process only, so no other process shares its storage through them. */
const inProcessBuses = new WeakSet<Bus>();

/** Whether `bus` came from {@link memoryBus} (and so fans out within this process only). */
export function isInProcessBus(bus: Bus): boolean {
  return inProcessBuses.has(bus);
}

/** The in-process bus: fan-out within one gateway process, synchronous and in order. */
export function memoryBus(): Bus {
  const emitter = new EventEmitter<Record<Owner, [BusMessage]>>();
  const bus: Bus = {
    publish(message) {
      emitter.emit(message.owner, message);
    },
    subscribe(owner, listener) {
      emitter.on(owner, listener);
      return () => {
        emitter.off(owner, listener);
      };
    },
  };
  inProcessBuses.add(bus);
  return bus;
}
