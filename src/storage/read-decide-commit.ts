/**
 * Writes that depend on channels read just before: each decision commits expecting those channels
 * unchanged (`Change.expectChannels`), and is taken again from a fresh read when another write,
 * from this process or another, came in between. This is how one default channel per owner holds
 * under concurrent requests (docs/PROTOCOL.md §3) without a lock in the gateway.
 * @module
 */
import type { Channel } from "../contracts/records.js";
import type { ChannelExpectation } from "../contracts/storage.js";

/** What an attempt returns when its commit was skipped: read and decide again. */
export const SUPERSEDED: unique symbol = Symbol("superseded");

/**
 * Far more attempts than contention takes: each retry follows a commit of another write, so n
 * writes of one channel at once need at most n. What gets this far is a storage that returns
 * channels changed, which never match what it stored.
 */
const MAX_ATTEMPTS = 200;

/** Runs `attempt` until it is not {@link SUPERSEDED}. */
export async function untilApplied<T>(attempt: () => Promise<T | typeof SUPERSEDED>): Promise<T> {
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    const outcome = await attempt();
    if (outcome !== SUPERSEDED) return outcome;
  }
  throw new Error(
    `a channel change was skipped ${MAX_ATTEMPTS} times as superseded: the storage does not return channels exactly as stored, so Change.expectChannels never holds`,
  );
}

/** Expect each channel stored as it was read. */
export function asRead(channels: Channel[]): ChannelExpectation[] {
  return channels.map((channel) => ({ chat_id: channel.chat_id, channel }));
}
