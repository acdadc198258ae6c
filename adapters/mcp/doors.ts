/**
 * The doors module, loaded on first use: the stdio bridge then starts without the gateway's core
 * and its doors, which only a `send_message` (its answer follower) or the HTTP form needs
 * (docs/PROTOCOL.md §20: the bridges start within a second).
 * @module
 */
let doors: Promise<typeof import("chat-gateway/doors")> | undefined;

/** `chat-gateway/doors`, imported once. */
export function loadDoors(): Promise<typeof import("chat-gateway/doors")> {
  doors ??= import("chat-gateway/doors");
  return doors;
}
