/**
 * Finding an owner's channels: the default channel made on first use, and `chat_id` + `thread_id`
 * resolved to a lane (docs/PROTOCOL.md §1).
 * @module
 */
import type { Channel } from "../contracts/records.js";
import type { Lane, Storage } from "../contracts/storage.js";
import { GatewayError } from "../protocol/errors.js";
import type { ChatId, Owner } from "../protocol/ids.js";
import { asRead, SUPERSEDED, untilApplied } from "../storage/read-decide-commit.js";

/** The default channel's id; every owner has exactly one channel of kind `default`. */
export const DEFAULT_CHAT_ID: ChatId = "default";

/** A lane with the channel records behind it. */
export interface ResolvedLane extends Lane {
  channel: Channel;
  thread: Channel | undefined;
}

/** Creates the owner's default channel on first use. */
export type EnsureDefaultChannel = (owner: Owner) => Promise<void>;
/** Resolves a request's `chat_id` and `thread_id` to a lane, or throws `not_found`. */
export type ResolveLane = (owner: Owner, chatId: ChatId, threadId?: ChatId | null) => Promise<ResolvedLane>;

/** The channel look-ups of one gateway. */
export class ChannelDirectory {
  readonly #storage: Storage;
  readonly #now: () => number;
  readonly #defaultEnsured = new Set<Owner>();
  /** The owners whose default channel is being looked for or made: every caller waits for the same. */
  readonly #ensuring = new Map<Owner, Promise<void>>();

  constructor(storage: Storage, now: () => number) {
    this.#storage = storage;
    this.#now = now;
  }

  readonly ensureDefaultChannel: EnsureDefaultChannel = async (owner) => {
    if (this.#defaultEnsured.has(owner)) return;
    // The devices of one owner come back together after a restart: one look (and one commit) for all
    // of them, rather than one each that all but one repeat.
    let ensuring = this.#ensuring.get(owner);
    if (!ensuring) {
      ensuring = this.#ensure(owner).finally(() => this.#ensuring.delete(owner));
      this.#ensuring.set(owner, ensuring);
    }
    await ensuring;
  };

  async #ensure(owner: Owner): Promise<void> {
    // First hellos in other processes at once: the first commit makes the channel, the others find it on their next read.
    await untilApplied(async () => {
      if (await this.#storage.getChannel(owner, DEFAULT_CHAT_ID)) return undefined;
      const defaults = (await this.#storage.listChannels(owner)).filter((c) => c.is_default);
      const channel: Channel = {
        chat_id: DEFAULT_CHAT_ID,
        name: "General",
        kind: "default",
        parent_chat_id: null,
        // Another channel may have been made default by server-side code before the first hello.
        is_default: defaults.length === 0,
        archived: false,
        created_ts: this.#now(),
      };
      const expectChannels = [{ chat_id: DEFAULT_CHAT_ID, channel: null }, ...asRead(defaults)];
      return (await this.#storage.commit(owner, { channels: [channel], expectChannels })).skipped
        ? SUPERSEDED
        : undefined;
    });
    this.#defaultEnsured.add(owner);
  }

  /**
   * A thread's id as `chat_id` with no `thread_id` means that thread. Unknown ids, or a thread
   * that is not the channel's, are `not_found`.
   */
  readonly resolveLane: ResolveLane = async (owner, chatId, threadId) => {
    const storage = this.#storage;
    const channel = await storage.getChannel(owner, chatId);
    if (!channel) throw new GatewayError("not_found", `unknown chat_id "${chatId}"`);
    if (threadId !== undefined && threadId !== null) {
      const thread = await storage.getChannel(owner, threadId);
      if (thread?.kind !== "thread" || thread.parent_chat_id !== channel.chat_id) {
        throw new GatewayError("not_found", `unknown thread_id "${threadId}" in chat "${chatId}"`);
      }
      return { chat_id: channel.chat_id, thread_id: thread.chat_id, channel, thread };
    }
    if (channel.kind === "thread" && channel.parent_chat_id) {
      const parent = await storage.getChannel(owner, channel.parent_chat_id);
      if (!parent) throw new GatewayError("not_found", `unknown chat_id "${chatId}"`);
      return { chat_id: parent.chat_id, thread_id: channel.chat_id, channel: parent, thread: channel };
    }
    return { chat_id: channel.chat_id, thread_id: null, channel, thread: undefined };
  };
}
