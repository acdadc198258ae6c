/**
 * Channels as models (docs/PROTOCOL.md §19): `default` names the owner's default channel, every
 * channel that takes user messages is listed by its name (by its `chat_id` where a name repeats).
 * @module
 */
import type { Channel, Owner } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { compareChannels } from "chat-gateway/protocol";
import { DoorError } from "./openai-errors.js";

/** Whose channels, read where. */
export interface OwnerChannels {
  storage: Storage;
  /** The owner the door's device said hello as: its hello made sure the default channel exists. */
  owner: Owner;
}

/** A model a door lists. */
export interface ChannelModel {
  id: string;
  chatId: string;
}

/**
 * The owner's channels that take user messages, in `channel.list` order (docs/PROTOCOL.md §3).
 * Read from the storage rather than by `channel.list`: that request also counts every lane's
 * unread answers (docs/PROTOCOL.md §15), a cost that grows with the threads a door's conversations make.
 */
async function writableChannels(from: OwnerChannels): Promise<Channel[]> {
  const channels = await from.storage.listChannels(from.owner);
  return channels.filter((c) => c.kind !== "thread" && c.automation !== true).sort(compareChannels);
}

/** The models of the owner: `default` first, then one per channel. */
export async function listModels(from: OwnerChannels): Promise<ChannelModel[]> {
  const channels = await writableChannels(from);
  const fallback = channels.find((c) => c.kind === "default");
  const current = channels.find((c) => c.is_default) ?? fallback;
  const models: ChannelModel[] = current ? [{ id: "default", chatId: current.chat_id }] : [];
  const taken = new Set(["default"]);
  for (const channel of channels) {
    if (channel.archived) continue;
    const id = taken.has(channel.name) ? channel.chat_id : channel.name;
    taken.add(id);
    models.push({ id, chatId: channel.chat_id });
  }
  return models;
}

/** The channel a request's `model` names: `default`, a listed name, or a `chat_id`; else 404. */
export async function channelOfModel(from: OwnerChannels, model: string): Promise<string> {
  const models = await listModels(from);
  const found = models.find((m) => m.id === model) ?? models.find((m) => m.chatId === model);
  if (found) return found.chatId;
  const channels = await writableChannels(from);
  const byId = channels.find((c) => c.chat_id === model);
  if (byId) return byId.chat_id;
  throw new DoorError(404, "not_found_error", `the model "${model.slice(0, 100)}" does not exist`, "model_not_found");
}
