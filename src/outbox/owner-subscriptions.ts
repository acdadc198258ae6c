/**
 * One bus subscription per owner while this process has work of that owner (turns, asks): what
 * the relays between processes listen on.
 * @module
 */
import type { Bus, BusMessage } from "../contracts/bus.js";
import type { Owner } from "../protocol/ids.js";

/**
 * A switch to call as an owner's work here starts (`true`) and ends (`false`): it subscribes
 * `listener` to the owner's bus frames once, and unsubscribes when the work ends. Resolves once
 * the subscription is ready (`bus.ready`).
 */
export function ownerSubscriptions(
  bus: Pick<Bus, "subscribe" | "ready">,
  listener: (owner: Owner, message: BusMessage) => void,
): (owner: Owner, active: boolean) => Promise<void> {
  const listening = new Map<Owner, () => void>();
  return async (owner, active) => {
    if (!active) {
      listening.get(owner)?.();
      listening.delete(owner);
      return;
    }
    if (listening.has(owner)) return;
    listening.set(
      owner,
      bus.subscribe(owner, (message) => listener(owner, message)),
    );
    await bus.ready?.(owner);
  };
}
