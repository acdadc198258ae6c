/**
 * The model a person chose for a lane (docs/PROTOCOL.md §11): kept on the lane's channel record
 * (the channel for its flat lane, the thread for a thread), so it outlives a restart.
 * @module
 */
import type { Owner } from "../protocol/ids.js";
import type { Change, Lane, Storage } from "../contracts/storage.js";
import { asRead } from "../storage/read-decide-commit.js";

/** The lane's chosen model, if any. */
export async function laneModel(services: { storage: Storage }, owner: Owner, lane: Lane): Promise<string | undefined> {
  const record = await services.storage.getChannel(owner, lane.thread_id ?? lane.chat_id);
  return record?.model;
}

/**
 * The change that makes `model` the lane's model, expecting the lane's record as read (a rename
 * or `channel.set_default` in between is not undone: the commit is skipped and decided again);
 * empty when the lane is gone.
 */
export async function laneModelChange(
  services: { storage: Storage },
  owner: Owner,
  lane: Lane,
  model: string,
): Promise<Change> {
  const record = await services.storage.getChannel(owner, lane.thread_id ?? lane.chat_id);
  return record ? { channels: [{ ...record, model }], expectChannels: asRead([record]) } : {};
}
