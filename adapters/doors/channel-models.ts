/**
 * Channels as models (docs/PROTOCOL.md §19): `default` names the owner's default channel, every
 * channel that takes user messages is listed by its name (by its `chat_id` where a name repeats).
 * @module
 */
import type { DoorDevice } from "./door-device.js";
import { DoorError } from "./openai-errors.js";

/** A channel as `channel.list` gives it. */
interface ListedChannel {
  chat_id: string;
  name: string;
  kind: string;
  is_default: boolean;
  archived: boolean;
  automation?: boolean;
}

/** A model a door lists. */
export interface ChannelModel {
  id: string;
  chatId: string;
}

/** The owner's channels that take user messages, in `channel.list` order. */
async function writableChannels(device: DoorDevice): Promise<ListedChannel[]> {
  const list = await device.request("channel.list", {});
  const channels = (list.payload.channels ?? []) as ListedChannel[];
  return channels.filter((c) => c.kind !== "thread" && c.automation !== true);
}

/** The models of the owner: `default` first, then one per channel. */
export async function listModels(device: DoorDevice): Promise<ChannelModel[]> {
  const channels = await writableChannels(device);
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
export async function channelOfModel(device: DoorDevice, model: string): Promise<string> {
  const models = await listModels(device);
  const found = models.find((m) => m.id === model) ?? models.find((m) => m.chatId === model);
  if (found) return found.chatId;
  const channels = await writableChannels(device);
  const byId = channels.find((c) => c.chat_id === model);
  if (byId) return byId.chat_id;
  throw new DoorError(404, "not_found_error", `the model "${model.slice(0, 100)}" does not exist`, "model_not_found");
}
