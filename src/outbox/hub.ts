/**
 * The gateway's shared state: storage and bus access, ordered publishing of stored frames, lane
 * resolution, the sessions of each owner, and push to owners with no connected device.
 * Internal: the public face is `createGateway()`.
 * @module
 */
import type { EventEmitter } from "eventemitter3";
import type { Authenticator } from "../contracts/authenticator.js";
import type { Bus, BusMessage, OutgoingFrame } from "../contracts/bus.js";
import type { CommandRegistry } from "../turn/commands.js";
import { ConnectionCount } from "../connection/connection-count.js";
import { GatewayError } from "../errors.js";
import type { Owner } from "../ids.js";
import { LaneScheduler } from "../turn/lanes.js";
import { OpenAsks } from "../asks/open-asks.js";
import type { Logger, ResolvedOptions } from "../options.js";
import type { PushMessage } from "../contracts/push.js";
import type { Channel } from "../contracts/records.js";
import type { AgentRuntime } from "../contracts/runtime.js";
import type { ServerFrame, StoredFrame } from "../protocol/protocol.js";
import type { Change, Lane, Storage } from "../contracts/storage.js";

/** The default channel's id; every owner has exactly one channel of kind `default`. */
export const DEFAULT_CHAT_ID = "default";

/** What a connection must offer the hub. */
export interface HubSession {
  readonly id: string;
  /** Deliver a frame published for the owner. */
  deliver(frame: OutgoingFrame): void;
  /** Send a response frame with its request id (in publish order). */
  respond(frame: OutgoingFrame, requestId: string | undefined): void;
  /** Close the socket with a close code. */
  close(code: number, reason: string): void;
}

/** A lane with the channel records behind it. */
export interface ResolvedLane extends Lane {
  channel: Channel;
  thread: Channel | undefined;
}

/** Events the gateway emits (`gateway.on(...)`). */
export interface GatewayEvents {
  /** A device completed `hello`. */
  connect: [info: { owner: Owner; deviceId: string; connectionId: string }];
  /** A device's connection ended. */
  disconnect: [info: { owner: Owner | undefined; deviceId: string | undefined; connectionId: string }];
  /** A turn began. */
  "turn:start": [info: { owner: Owner; chat_id: string; thread_id: string | null; message_id: string }];
  /** A turn ended, with how. */
  "turn:end": [info: { owner: Owner; chat_id: string; thread_id: string | null; message_id: string; status: string }];
  /** Something unexpected happened; it was logged and reported to the client as `internal`. */
  error: [error: unknown];
}

interface OwnerLocal {
  sessions: Set<HubSession>;
  unsubscribe: () => void;
}

/** The shared state of one gateway. */
export class Hub {
  /** The gateway's own emitter: events go to `gateway.on(...)` listeners. */
  readonly events: EventEmitter<GatewayEvents>;
  readonly options: ResolvedOptions;
  readonly storage: Storage;
  readonly runtime: AgentRuntime;
  readonly bus: Bus;
  readonly authenticator: Authenticator;
  readonly commands: CommandRegistry;
  readonly log: Logger;
  /** One turn at a time per lane. */
  readonly lanes: LaneScheduler;
  /** The asks this process holds (docs/PROTOCOL.md §11). */
  readonly asks: OpenAsks;
  /** Open connections per client address in this process (`maxConnectionsPerIp`). */
  readonly addresses = new ConnectionCount();
  readonly #owners = new Map<Owner, OwnerLocal>();
  /** Per owner: the tail of the publish chain, so stored frames go out in `seq` order. */
  readonly #publishTail = new Map<Owner, Promise<void>>();
  /** Per owner: appends since the last prune. */
  readonly #appendsSincePrune = new Map<Owner, number>();
  readonly #defaultEnsured = new Set<Owner>();

  constructor(parts: {
    options: ResolvedOptions;
    storage: Storage;
    runtime: AgentRuntime;
    bus: Bus;
    authenticator: Authenticator;
    commands: CommandRegistry;
    events: EventEmitter<GatewayEvents>;
  }) {
    this.events = parts.events;
    this.options = parts.options;
    this.storage = parts.storage;
    this.runtime = parts.runtime;
    this.bus = parts.bus;
    this.authenticator = parts.authenticator;
    this.commands = parts.commands;
    this.log = parts.options.logger;
    this.asks = new OpenAsks(this);
    this.lanes = new LaneScheduler(parts.options.maxTurnsPerOwner, parts.options.laneLock, (error) => this.log.warn("lane lock failed; the turn runs without it", error));
  }

  now(): number {
    return this.options.now();
  }

  /**
   * Commit a change with outbox frames atomically, then publish the frames in `seq` order to every
   * device of the owner. The requester, if given, gets its response (with the request id) in that
   * same order instead of the broadcast copy. Resolves with the frames as published: none when
   * storage skipped the change (a message in `change.requireMessages` is gone).
   */
  async store(
    owner: Owner,
    change: Change,
    frames: StoredFrame[] = [],
    respondTo?: { session: HubSession; requestId: string | undefined; frameIndex?: number },
  ): Promise<OutgoingFrame[]> {
    const committing = this.storage.commit(owner, { ...change, outbox: frames });
    // Handled below, after earlier publishes; without this an early rejection counts as unhandled.
    committing.catch(() => undefined);
    const previous = this.#publishTail.get(owner) ?? Promise.resolve();
    let published: OutgoingFrame[] = [];
    // Commits start at once (storage batches them); only publishing waits for earlier commits.
    const step = previous.then(async () => {
      const result = await committing;
      if (result.skipped) return;
      published = frames.map((frame, i) => ({ type: frame.type, payload: frame.payload, seq: result.seqs[i] }));
      const answered = respondTo ? (respondTo.frameIndex ?? 0) : -1;
      published.forEach((frame, i) => {
        if (i === answered && respondTo) {
          respondTo.session.respond(frame, respondTo.requestId);
          this.bus.publish({ owner, frame, except: respondTo.session.id });
        } else {
          this.bus.publish({ owner, frame });
        }
      });
      if (result.orphanedMedia.length > 0 && this.options.mediaStore) {
        this.options.mediaStore.delete(owner, result.orphanedMedia).catch((error) => this.log.warn("media delete failed", error));
      }
      this.#countAppends(owner, frames.length);
    });
    const tail = step.catch(() => undefined);
    this.#publishTail.set(owner, tail);
    void tail.then(() => {
      if (this.#publishTail.get(owner) === tail) this.#publishTail.delete(owner);
    });
    await step;
    return published;
  }

  /** Send a live (not stored) frame to every device of the owner. */
  live(owner: Owner, frame: ServerFrame, except?: string): void {
    this.bus.publish({ owner, frame, except });
  }

  #countAppends(owner: Owner, count: number): void {
    if (count === 0) return;
    const total = (this.#appendsSincePrune.get(owner) ?? 0) + count;
    // Pruning is an indexed range delete; doing it every 100 appends keeps it off the per-write path.
    if (total < 100) {
      this.#appendsSincePrune.set(owner, total);
      return;
    }
    this.#appendsSincePrune.set(owner, 0);
    this.storage.pruneOutbox(owner, this.options.retention, this.now()).catch((error) => this.log.warn("outbox prune failed", error));
  }

  /** Create the owner's default channel on first use. */
  async ensureDefaultChannel(owner: Owner): Promise<void> {
    if (this.#defaultEnsured.has(owner)) return;
    const existing = await this.storage.getChannel(owner, DEFAULT_CHAT_ID);
    if (!existing) {
      const channels = await this.storage.listChannels(owner);
      const channel: Channel = {
        chat_id: DEFAULT_CHAT_ID,
        name: "General",
        kind: "default",
        parent_chat_id: null,
        // Another channel may have been made default by server-side code before the first hello.
        is_default: !channels.some((c) => c.is_default),
        archived: false,
        created_ts: this.now(),
      };
      await this.storage.commit(owner, { channels: [channel] });
    }
    this.#defaultEnsured.add(owner);
  }

  /**
   * Resolve `chat_id` + `thread_id` to a lane (docs/PROTOCOL.md §1): a thread's id as `chat_id` with no
   * `thread_id` means that thread. Unknown ids, or a thread that is not the channel's, are `not_found`.
   */
  async resolveLane(owner: Owner, chatId: string, threadId?: string | null): Promise<ResolvedLane> {
    const channel = await this.storage.getChannel(owner, chatId);
    if (!channel) throw new GatewayError("not_found", `unknown chat_id "${chatId}"`);
    if (threadId !== undefined && threadId !== null) {
      const thread = await this.storage.getChannel(owner, threadId);
      if (!thread || thread.kind !== "thread" || thread.parent_chat_id !== channel.chat_id) {
        throw new GatewayError("not_found", `unknown thread_id "${threadId}" in chat "${chatId}"`);
      }
      return { chat_id: channel.chat_id, thread_id: thread.chat_id, channel, thread };
    }
    if (channel.kind === "thread" && channel.parent_chat_id) {
      const parent = await this.storage.getChannel(owner, channel.parent_chat_id);
      if (!parent) throw new GatewayError("not_found", `unknown chat_id "${chatId}"`);
      return { chat_id: parent.chat_id, thread_id: channel.chat_id, channel: parent, thread: channel };
    }
    return { chat_id: channel.chat_id, thread_id: null, channel, thread: undefined };
  }

  /** Start delivering the owner's frames to a session. */
  attach(owner: Owner, session: HubSession): void {
    let local = this.#owners.get(owner);
    if (!local) {
      const sessions = new Set<HubSession>();
      const unsubscribe = this.bus.subscribe(owner, (message: BusMessage) => {
        const frame = message.frame;
        // Frames between gateway processes: only a response for one of these connections goes on.
        if (frame.type.startsWith("internal.")) {
          if (frame.type !== "internal.respond") return;
          const { connection_id: id, request_id: requestId, frame: response } = frame.payload as { connection_id: string; request_id?: string; frame: OutgoingFrame };
          for (const s of sessions) if (s.id === id) s.respond(response, requestId);
          return;
        }
        for (const s of sessions) if (s.id !== message.except) s.deliver(frame);
      });
      local = { sessions, unsubscribe };
      this.#owners.set(owner, local);
    }
    local.sessions.add(session);
  }

  /** Stop delivering to a session. */
  detach(owner: Owner, session: HubSession): void {
    const local = this.#owners.get(owner);
    if (!local) return;
    local.sessions.delete(session);
    if (local.sessions.size === 0) {
      local.unsubscribe();
      this.#owners.delete(owner);
    }
  }

  /** True when the owner has a connected device in this process. */
  isConnected(owner: Owner): boolean {
    return this.connectionCount(owner) > 0;
  }

  /** How many of the owner's connections completed hello in this process. */
  connectionCount(owner: Owner): number {
    return this.#owners.get(owner)?.sessions.size ?? 0;
  }

  /**
   * Push to each of the owner's devices with a target, when none of them is connected. A device
   * is reached only through the sender it declared in `caps.push` (`"none"`: never). Never
   * rejects: failures are retried with backoff, then logged.
   */
  pushIfAway(owner: Owner, message: PushMessage): void {
    if (this.options.push.length === 0 || this.isConnected(owner)) return;
    void (async () => {
      if (this.bus.connected && (await this.bus.connected(owner).catch(() => false))) return;
      const devices = await this.storage.listDevices(owner);
      for (const device of devices) {
        const wanted = device.caps?.push;
        if (!wanted || wanted === "none") continue;
        const sender = this.options.push.find((s) => s.name === wanted && s.accepts(device));
        if (sender) void this.#pushWithRetry(owner, device.device_id, () => sender.send(owner, device, message), sender.name);
      }
    })().catch((error) => this.log.warn("push: listing devices failed", error));
  }

  async #pushWithRetry(owner: Owner, deviceId: string, send: () => Promise<void>, name: string): Promise<void> {
    const { attempts, backoffMs } = this.options.pushRetry;
    for (let attempt = 1; ; attempt++) {
      try {
        await send();
        return;
      } catch (error) {
        const permanent = Boolean((error as { permanent?: boolean }).permanent);
        if (permanent || attempt > attempts) {
          this.log.warn(`push via ${name} to device ${deviceId} of ${owner} failed${permanent ? " permanently" : ` after ${attempt} attempts`}`, error);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, backoffMs * 2 ** (attempt - 1)));
      }
    }
  }
}
