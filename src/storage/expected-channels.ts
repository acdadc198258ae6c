/**
 * The check of `Change.expectChannels`, shared by the built-in storages so that each compares the
 * same way (see {@link sameRecord}).
 * @module
 */
import type { Channel } from "../contracts/records.js";
import type { ChannelExpectation } from "../contracts/storage-change.js";
import { sameRecord } from "./same-record.js";

/**
 * True when every expectation holds: `stored[i]` is what the owner has stored under
 * `expected[i].chat_id` (undefined when nothing), read inside the commit's transaction.
 */
export function expectedChannelsHeld(
  expected: readonly ChannelExpectation[],
  stored: ReadonlyArray<Channel | undefined>,
): boolean {
  return expected.every(({ channel }, i) =>
    channel === null ? stored[i] === undefined : stored[i] !== undefined && sameRecord(channel, stored[i]),
  );
}
