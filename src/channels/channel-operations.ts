/**
 * Channel frames: list, set_default, and the create / update / delete extensions (docs/PROTOCOL.md §3),
 * plus the server-side channel API.
 * @module
 */
import { compareChannels } from "../protocol/channel-order.js";
import { channelPayload, checkColor, checkIcon, checkName, createdPayload } from "./channel-rules.js";
import { GatewayError } from "../protocol/errors.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import { DEFAULT_CHAT_ID, type EnsureDefaultChannel } from "./channel-directory.js";
import type { Respondent, StoreChange } from "../outbox/outbox.js";
import type { Lane, Storage } from "../contracts/storage.js";
import { newId } from "../support/id-generator.js";
import type { ChatId, Owner } from "../protocol/ids.js";
import type { Channel } from "../contracts/records.js";
import type { StoredFrame } from "../protocol/protocol.js";
import { asRead, SUPERSEDED, untilApplied } from "../storage/read-decide-commit.js";

/** Who asked, so the response carries the request id (absent for server-side calls). */
export type Requester = Respondent | undefined;

/** What the channel handlers read and write through. */
export interface ChannelServices {
  readonly storage: Storage;
  now(): number;
  readonly store: StoreChange;
  readonly ensureDefaultChannel: EnsureDefaultChannel;
  /** Only to drop the queued turns of a deleted channel's lanes. */
  readonly lanes: { clear(owner: Owner, lane: Lane): void };
}

/** What server-side code may set when creating a channel. */
export interface ChannelInput {
  name: string;
  kind?: "channel" | "thread";
  parent_chat_id?: ChatId | null;
  favorite?: boolean;
  icon?: string | null;
  color?: string | null;
  automation?: boolean;
  /** Set by the gateway for threads it mints (auto-threading): their `channel.created` says `auto: true`. */
  auto?: boolean;
}

/** Every channel of an owner in protocol order. */
export async function listChannels(services: ChannelServices, owner: Owner): Promise<Channel[]> {
  await services.ensureDefaultChannel(owner);
  // `auto` belongs to `channel.created` only; a record stored by an older version may still hold it.
  return (await services.storage.listChannels(owner))
    .map(({ auto: _auto, ...channel }) => channel)
    .sort(compareChannels);
}

/** Validate and build a new channel record (not stored). */
export async function buildChannel(services: ChannelServices, owner: Owner, input: ChannelInput): Promise<Channel> {
  return (await checkedChannel(services, owner, input)).channel;
}

/** The new channel record, with the parent (of a thread) it was checked against. */
async function checkedChannel(
  services: ChannelServices,
  owner: Owner,
  input: ChannelInput,
): Promise<{ channel: Channel; parent?: Channel }> {
  const kind = input.kind ?? "channel";
  const channel: Channel = {
    chat_id: newId(kind === "thread" ? "t" : "c"),
    name: checkName(input.name),
    kind,
    parent_chat_id: null,
    is_default: false,
    archived: false,
    created_ts: services.now(),
  };
  if (kind === "thread") {
    if (!input.parent_chat_id)
      throw new GatewayError("unsupported", `field "parent_chat_id": a thread needs its parent channel`);
    const parent = await services.storage.getChannel(owner, input.parent_chat_id);
    if (!parent) throw new GatewayError("not_found", `unknown parent_chat_id "${input.parent_chat_id}"`);
    if (parent.kind === "thread") throw new GatewayError("unsupported", "a thread cannot have threads");
    channel.parent_chat_id = parent.chat_id;
    if (input.automation) throw new GatewayError("unsupported", "a thread cannot be an automation channel");
    return { channel: withOptions(channel, input), parent };
  } else if (input.parent_chat_id) {
    throw new GatewayError("unsupported", `field "parent_chat_id": only a thread has a parent`);
  }
  return { channel: withOptions(channel, input) };
}

function withOptions(channel: Channel, input: ChannelInput): Channel {
  if (input.favorite !== undefined) channel.favorite = input.favorite;
  const icon = checkIcon(input.icon);
  if (icon !== undefined) channel.icon = icon;
  const color = checkColor(input.color);
  if (color !== undefined) channel.color = color;
  if (input.automation) channel.automation = true;
  return channel;
}

/** Create a channel or thread, store `channel.created` and broadcast it. */
export async function createChannel(
  services: ChannelServices,
  owner: Owner,
  input: ChannelInput,
  requester?: Requester,
): Promise<Channel> {
  await services.ensureDefaultChannel(owner);
  // A thread expects its parent as checked: one deleted meanwhile is `not_found` on the next try.
  return untilApplied(async () => {
    const { channel, parent } = await checkedChannel(services, owner, input);
    const change = { channels: [channel], expectChannels: asRead(parent ? [parent] : []) };
    const stored = await services.store(
      owner,
      change,
      [{ type: "channel.created", payload: createdPayload(channel, input.auto) }],
      requester,
    );
    return stored.length ? channel : SUPERSEDED;
  });
}

/** Change a channel's name, archived flag or cosmetics; stores and broadcasts `channel.renamed`. */
export async function updateChannel(
  services: ChannelServices,
  owner: Owner,
  input: ClientPayloads["channel.update"],
  requester?: Requester,
): Promise<Channel> {
  // Applied to the channel as stored when it commits: a concurrent change of another field (or of
  // the default) is kept, and a channel deleted meanwhile is `not_found`.
  return untilApplied(async () => {
    const current = await services.storage.getChannel(owner, input.chat_id);
    if (!current) throw new GatewayError("not_found", `unknown chat_id "${input.chat_id}"`);
    const next: Channel = { ...current };
    if (input.name !== undefined) next.name = checkName(input.name);
    if (input.archived !== undefined) next.archived = input.archived;
    if (input.favorite !== undefined) next.favorite = input.favorite;
    if (input.icon !== undefined) next.icon = checkIcon(input.icon);
    if (input.color !== undefined) next.color = checkColor(input.color);
    const change = { channels: [next], expectChannels: asRead([current]) };
    const stored = await services.store(
      owner,
      change,
      [{ type: "channel.renamed", payload: channelPayload(next) }],
      requester,
    );
    return stored.length ? next : SUPERSEDED;
  });
}

/** Make a channel the default; both the new and the previous default get `channel.renamed`. */
export async function setDefault(
  services: ChannelServices,
  owner: Owner,
  chatId: ChatId,
  requester?: Requester,
): Promise<Channel> {
  await services.ensureDefaultChannel(owner);
  // Many at once: each commits expecting the target and the default it demotes as read, so one
  // wins and the others decide again from the new default; one default at every moment.
  return untilApplied(async () => {
    const target = await services.storage.getChannel(owner, chatId);
    if (!target) throw new GatewayError("not_found", `unknown chat_id "${chatId}"`);
    if (target.kind === "thread") throw new GatewayError("unsupported", "a thread cannot be the default channel");
    if (target.automation) throw new GatewayError("unsupported", "an automation channel cannot be the default channel");
    const previous = (await services.storage.listChannels(owner)).filter((c) => c.is_default && c.chat_id !== chatId);
    const next: Channel = { ...target, is_default: true };
    const demoted = previous.map((c) => ({ ...c, is_default: false }));
    const frames: StoredFrame[] = [next, ...demoted].map((c) => ({
      type: "channel.renamed",
      payload: channelPayload(c),
    }));
    // Demoted first: a storage with a unique "one default per owner" index never holds two.
    const change = { channels: [...demoted, next], expectChannels: asRead([target, ...previous]) };
    const stored = await services.store(owner, change, frames, requester);
    return stored.length ? next : SUPERSEDED;
  });
}

/**
 * Delete a channel with its threads, messages and their media. The channel of kind `default` and
 * the current default cannot be deleted.
 */
export async function deleteChannel(
  services: ChannelServices,
  owner: Owner,
  chatId: ChatId,
  requester?: Requester,
): Promise<void> {
  // Expects the channel as read: one made the default meanwhile is refused on the next try.
  const target = await untilApplied(() => deleteAsRead(services, owner, chatId, requester));
  if (target.kind === "thread") return;
  // A thread created after the read above and stored before the deletion lost its parent: it goes
  // too. One created later expected the parent as read and finds it gone (`not_found`).
  await untilApplied(async () => {
    const orphans = (await services.storage.listChannels(owner)).filter((c) => c.parent_chat_id === chatId);
    return orphans.length ? deleteAll(services, owner, orphans, undefined) : undefined;
  });
}

/** Deletes `gone` expecting each as read; the first one's `channel.deleted` answers `requester`. */
async function deleteAll(
  services: ChannelServices,
  owner: Owner,
  gone: Channel[],
  requester: Requester,
): Promise<"deleted" | typeof SUPERSEDED> {
  for (const channel of gone) {
    const lane =
      channel.kind === "thread"
        ? { chat_id: channel.parent_chat_id!, thread_id: channel.chat_id }
        : { chat_id: channel.chat_id, thread_id: null };
    services.lanes.clear(owner, lane);
  }
  const frames: StoredFrame[] = gone.map((c) => ({ type: "channel.deleted", payload: { chat_id: c.chat_id } }));
  const change = { deleteChannels: gone.map((c) => c.chat_id), expectChannels: asRead(gone) };
  const stored = await services.store(owner, change, frames, requester && { ...requester, frameIndex: 0 });
  return stored.length ? "deleted" : SUPERSEDED;
}

async function deleteAsRead(
  services: ChannelServices,
  owner: Owner,
  chatId: ChatId,
  requester: Requester,
): Promise<Channel | typeof SUPERSEDED> {
  const target = await services.storage.getChannel(owner, chatId);
  if (!target) throw new GatewayError("not_found", `unknown chat_id "${chatId}"`);
  if (target.kind === "default" || target.chat_id === DEFAULT_CHAT_ID)
    throw new GatewayError("unsupported", "the default channel cannot be deleted");
  if (target.is_default)
    throw new GatewayError(
      "unsupported",
      "the current default channel cannot be deleted; make another channel the default first",
    );
  const threads =
    target.kind === "thread"
      ? []
      : (await services.storage.listChannels(owner)).filter((c) => c.parent_chat_id === target.chat_id);
  // The requested channel's frame is the response; its threads' frames are broadcast only.
  return (await deleteAll(services, owner, [target, ...threads], requester)) === SUPERSEDED ? SUPERSEDED : target;
}
