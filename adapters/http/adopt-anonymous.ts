/**
 * The first `user add` adopting the anonymous owner's data (docs/PROTOCOL.md §10.4): the checks
 * made before the password is asked for, then the move itself, media files included.
 * @module
 */
import { ANONYMOUS_OWNER, type ChatId, type MediaId, type MediaStore, type Owner } from "chat-gateway";
import type { AdoptedCounts, Storage } from "chat-gateway/storage";
import { isGatewayError } from "chat-gateway/protocol";
import { UserStoreError } from "./user-store.js";

/** The gateway's data, for the first `user add` to hand the anonymous owner's chats to the new user. */
export interface UserCliData {
  /** The storage the server uses, not opened: the CLI opens it only to adopt, and closes it after. */
  storage: Storage;
  /** The server's media store: the files of the adopted media move with their records. */
  mediaStore?: MediaStore;
}

/** An adoption whose checks passed; nothing has changed yet. */
export interface PendingAdoption {
  /** What will move and what will not, for the person to read before it happens (see {@link describePlan}). */
  readonly plan: string;
  /** Moves the anonymous owner's data (and media files) to the user; undefined when nothing was left to move. */
  run(): Promise<AdoptedCounts | undefined>;
  /** Closes the storage; call it whatever happened. */
  close(): Promise<void>;
}

/** What {@link planAdoption} found to move, on a storage that stays open. */
export interface AdoptionPlan {
  /** What will move and what will not, in one line for the person to read before it happens. */
  readonly plan: string;
  /** Moves the anonymous owner's data (and media files) to the user. */
  run(): Promise<AdoptedCounts>;
}

/**
 * A running server that moves the anonymous chats through its own open storage, for a user CLI
 * that cannot open the storage while the server holds it (sql.js keeps its data folder to one
 * process). The server answers both with {@link planAdoption} on its storage and media store.
 */
export interface AdoptionServer {
  /** The plan's text, or null when there is nothing to move; rejects with why it cannot move it. */
  plan(to: Owner): Promise<string | null>;
  /**
   * Moves it, planning again first: null when nothing is left to move (another `user add` at the
   * same time moved it). Rejects with why it cannot.
   */
  adopt(to: Owner): Promise<AdoptedCounts | null>;
}

const NO_ADOPT_HINT = "add the user with --no-adopt to leave the chats made while login was off where they are";

/**
 * Opens the storage and checks that the data of {@link ANONYMOUS_OWNER} can move to `to`:
 * resolves undefined (storage closed) when there is nothing to move, and throws a
 * `UserStoreError` saying what to do when the storage cannot move it or `to` has data already.
 */
export async function prepareAdoption(data: UserCliData, to: Owner): Promise<PendingAdoption | undefined> {
  const { storage } = data;
  refuseWithoutAdoption(storage, to);
  try {
    await storage.open();
  } catch (error) {
    throw new UserStoreError(
      `cannot open the storage to adopt the anonymous chats (${(error as Error).message}); stop the server first, or ${NO_ADOPT_HINT}`,
    );
  }
  const close = () => storage.close();
  try {
    const planned = await planAdoption(data, to);
    if (planned === undefined) await close();
    return planned && { ...planned, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The checks and the move of the first `user add` (docs/PROTOCOL.md §10.4) on a storage that is
 * open already, a running server's: undefined when the anonymous owner has nothing to move, and a
 * `UserStoreError` saying what to do when the storage cannot move it or `to` has data already.
 * The storage stays open. The move itself is one `adoptOwner` write: what the anonymous owner's
 * devices store after it stays theirs.
 */
export async function planAdoption(data: UserCliData, to: Owner): Promise<AdoptionPlan | undefined> {
  const { storage, mediaStore } = data;
  refuseWithoutAdoption(storage, to);
  if (await holdsData(storage, to)) {
    throw new UserStoreError(
      `${to} already has chats of its own (a user of that name existed before): its data and the anonymous chats cannot be merged; ${NO_ADOPT_HINT}, or choose another name`,
    );
  }
  const [channels, devices, bounds, held] = await Promise.all([
    storage.listChannels(ANONYMOUS_OWNER),
    storage.listDevices(ANONYMOUS_OWNER),
    storage.outboxBounds(ANONYMOUS_OWNER),
    heldHistory(storage, ANONYMOUS_OWNER),
  ]);
  // History only: the devices stay where they are (anyone local could register one while login was off).
  // No frame kept (`first` past `last`): also after an adoption, whose seqs the owner keeps counting.
  if (channels.length === 0 && bounds.first > bounds.last) return undefined;
  return {
    plan: describePlan(
      channels.map((c) => c.name),
      devices.length,
      to,
      held.messages,
    ),
    run: () => adopt(storage, mediaStore, to),
  };
}

/** The adoption a running server makes for the CLI; its refusals read as the CLI's own. */
export async function serverAdoption(server: AdoptionServer, to: Owner): Promise<PendingAdoption | undefined> {
  const plan = await asUserError(() => server.plan(to));
  if (plan === null) return undefined;
  const run = async () => (await asUserError(() => server.adopt(to))) ?? undefined;
  return { plan, run, close: async () => undefined };
}

async function asUserError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw error instanceof UserStoreError ? error : new UserStoreError((error as Error).message, { cause: error });
  }
}

function refuseWithoutAdoption(storage: Storage, to: Owner): void {
  if (storage.capabilities.adoptOwner) return;
  throw new UserStoreError(
    `this storage cannot hand the anonymous chats to ${to} (it lacks the adoptOwner capability); ${NO_ADOPT_HINT}`,
  );
}

async function holdsData(storage: Storage, owner: Owner): Promise<boolean> {
  const [channels, devices, bounds] = await Promise.all([
    storage.listChannels(owner),
    storage.listDevices(owner),
    storage.outboxBounds(owner),
  ]);
  return channels.length > 0 || devices.length > 0 || bounds.last > 0;
}

/**
 * The line printed before the adoption (docs/PROTOCOL.md §10.4): the channels that will move, and
 * the devices that will not. A device registered while login was off could be anyone's, so it
 * never receives the new user's messages or pushes until it signs in as that user.
 */
export function describePlan(channelNames: readonly string[], devices: number, to: Owner, messages?: number): string {
  const shown = channelNames.slice(0, 10).map((name) => JSON.stringify(name.slice(0, 40)));
  const names = shown.length === 0 ? "" : ` (${shown.join(", ")}${channelNames.length > shown.length ? ", …" : ""})`;
  const one = channelNames.length === 1;
  const kept =
    devices === 0
      ? ""
      : devices === 1
        ? `; not the device registered while login was off: it gets ${to}'s messages and pushes only once it signs in as ${to}`
        : `; not the ${devices} devices registered while login was off: they get ${to}'s messages and pushes only once they sign in as ${to}`;
  const what = messages === undefined ? "messages" : counted(messages, "message", "messages");
  return `${to} will adopt the chats made while login was off: ${channels(channelNames.length)}${names}, with ${one ? "its" : "their"} ${what} and media${kept}`;
}

/** `n` and a noun, singular for one. */
function counted(n: number, singular: string, plural: string): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** A count of channels and threads: a lone one is a channel, since a thread moves with its channel. */
function channels(n: number): string {
  return counted(n, "channel", "channels and threads");
}

/**
 * Copies the media files first and removes the old ones only once the records moved, so a crash
 * at any point leaves every record with its file (at worst a spare copy of some files).
 */
async function adopt(storage: Storage, mediaStore: MediaStore | undefined, to: Owner): Promise<AdoptedCounts> {
  const media = mediaStore ? (await heldHistory(storage, ANONYMOUS_OWNER)).media : [];
  const copied: MediaId[] = [];
  for (const id of media) if (await copyMedia(mediaStore!, id, to)) copied.push(id);
  let counts: AdoptedCounts;
  try {
    counts = await storage.adoptOwner(ANONYMOUS_OWNER, to);
  } catch (error) {
    await mediaStore?.delete(to, copied).catch(() => undefined);
    throw isGatewayError(error) ? new UserStoreError(`the anonymous chats were not adopted: ${error.message}`) : error;
  }
  await mediaStore?.delete(ANONYMOUS_OWNER, copied);
  return counts;
}

/** How many messages the owner has and the media they hold, from every lane's history. */
async function heldHistory(storage: Storage, owner: Owner): Promise<{ messages: number; media: MediaId[] }> {
  const ids = new Set<MediaId>();
  let messages = 0;
  for (const c of await storage.listChannels(owner)) {
    const lane: { chat_id: ChatId; thread_id: ChatId | null } = c.parent_chat_id
      ? { chat_id: c.parent_chat_id, thread_id: c.chat_id }
      : { chat_id: c.chat_id, thread_id: null };
    let before: string | undefined;
    for (;;) {
      const page = await storage.history(owner, { ...lane, limit: 200, ...(before === undefined ? {} : { before }) });
      messages += page?.messages.length ?? 0;
      for (const m of page?.messages ?? []) for (const ref of m.media) ids.add(ref.media_id);
      if (!page?.has_more || page.messages.length === 0) break;
      before = page.messages[0]!.message_id;
    }
  }
  return { messages, media: [...ids] };
}

/** Copies one file to the new owner; false when the anonymous owner has no file of that id. */
async function copyMedia(mediaStore: MediaStore, mediaId: MediaId, to: Owner): Promise<boolean> {
  const writer = await mediaStore.createWriter(to, mediaId);
  try {
    for await (const chunk of mediaStore.read(ANONYMOUS_OWNER, mediaId)) await writer.write(chunk);
    await writer.commit();
    return true;
  } catch (error) {
    await writer.abort();
    if (isGatewayError(error) && error.code === "not_found") return false;
    throw error;
  }
}

/** The line that tells what was adopted. */
export function describeAdoption(counts: AdoptedCounts, to: Owner): string {
  const { messages, media } = counts;
  return `${to} adopted the chats made while login was off: ${channels(counts.channels)}, ${counted(messages, "message", "messages")}, ${counted(media, "media file", "media files")}`;
}
