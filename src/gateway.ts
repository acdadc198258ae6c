/**
 * `createGateway()`: wire a storage, an authenticator and an agent runtime into a gateway that
 * any transport can feed connections to.
 * @module
 */
import { EventEmitter } from "eventemitter3";
import { memoryBus, type Bus } from "./contracts/bus.js";
import {
  createChannel,
  deleteChannel,
  listChannels,
  setDefault,
  updateChannel,
  type ChannelInput,
} from "./channels/channel-operations.js";
import { createCommandRegistry, type CommandRegistry } from "./turn/commands.js";
import type { Connection, ConnectionHandle } from "./contracts/connection.js";
import { DeviceSession } from "./connection/device-session.js";
import type { SessionServices } from "./connection/session-services.js";
import { notifyOwner, settleWithin, statsOf, type CloseOptions, type GatewayStats } from "./gateway-ops.js";
import { importMessages, type ImportedMessage } from "./requests/imported-messages.js";
import type { AdmissionRequest } from "./admission/queue.js";
import { CLOSE_CODES, GatewayError } from "./protocol/errors.js";
import type { GatewayEvents } from "./options/gateway-events.js";
import type { Outbox } from "./outbox/outbox.js";
import type { NotifyInput } from "./outbox/notification.js";
import type { ChatId, Owner, Seq } from "./protocol/ids.js";
import type { GatewayOptions, ResolvedOptions } from "./options/options.js";
import type { Channel, StoredMessage } from "./contracts/records.js";
import type { Lane } from "./contracts/storage.js";
import { checkRevocation, type Revocation } from "./connection/revocation.js";
import { resolveOptions } from "./resolve-options.js";
import { wireServices } from "./gateway-services.js";
import { startOverduePushes } from "./push/overdue-pushes.js";
import { turnRecovery, type TurnRecovery } from "./lanes/recovery.js";
import { post, type PostInput } from "./lanes/posts.js";
import { redeemActionToken, type AskActionOutcome } from "./asks/ask-actions.js";
import { Scheduler } from "./schedules/scheduler.js";
import { NO_SCHEDULES, scheduleApi, type ScheduleApi } from "./schedules/schedule-api.js";

export type { PostInput } from "./lanes/posts.js";
export type { NotifyInput } from "./outbox/notification.js";

/** Server-side channel management (`gateway.channels`). */
export interface ChannelApi {
  /** Create a channel or thread (`automation: true` for a read-only channel that only the gateway posts into). */
  create(owner: Owner, input: ChannelInput): Promise<Channel>;
  /** Every channel and thread of the owner, in protocol order. */
  list(owner: Owner): Promise<Channel[]>;
  /** Rename, archive or restyle a channel. */
  update(
    owner: Owner,
    chatId: ChatId,
    changes: { name?: string; archived?: boolean; favorite?: boolean; icon?: string | null; color?: string | null },
  ): Promise<Channel>;
  /** Make a channel the owner's default. */
  setDefault(owner: Owner, chatId: ChatId): Promise<Channel>;
  /** Delete a channel with its threads, messages and media. */
  delete(owner: Owner, chatId: ChatId): Promise<void>;
}

/** A running gateway. Feed it connections with {@link Gateway.accept} (the ws adapter does this). */
export interface Gateway extends EventEmitter<GatewayEvents> {
  /**
   * Open storage and close turns that a crash left running. Call once before accepting
   * connections; when it rejects (storage could not open), nothing started and it may be called again.
   */
  start(): Promise<void>;
  /**
   * Stop: refuse new connections, end running turns (marked interrupted), flush storage, close
   * every socket with 1001. With `drainMs` it drains first (docs/PROTOCOL.md §18): no new turn
   * starts (a `message.send` is refused `rate_limited`, waiting messages stay stored for the next
   * start), running turns get up to `drainMs` to finish, the rest end interrupted, and every
   * socket closes with 1012 so clients reconnect at once.
   */
  close(options?: CloseOptions): Promise<void>;
  /** Take a new connection; the transport feeds the returned handle. */
  accept(connection: Connection): ConnectionHandle;
  /**
   * Hand a new connection over before any work is spent on it (the `ws` adapter does, before the
   * WebSocket upgrade): `request.take()` is called, at once or once there is room, and must call
   * {@link accept} synchronously; or `request.refuse(retryAfterMs)` when the connection cannot
   * wait (HTTP 503 with `Retry-After-Ms` for ws). There is room while the hellos in progress and
   * the connections taken in the last two seconds that have not sent their first frame are under
   * `maxHellosInFlight`; connections wait in arrival order, at most `request.maxWaitMs` (default
   * `helloTimeoutMs`), at most `maxConnectionsWaiting` of them and `maxConnectionsPerIp` of
   * one address (docs/PROTOCOL.md §18.5).
   * A refusal counts in `stats().hellos.shed`. Returns a function that withdraws the connection
   * (call it when its socket closes while it waits).
   */
  admitConnection(request: AdmissionRequest): () => void;
  /**
   * Close, with `error {code: "auth"}` and 4401, every connection of this process that the
   * revocation covers: admitted with that session id (`AuthResult.sessions`), for that user, or
   * (`{anonymous: true}`) without a user. A connection whose `hello` is being authenticated is
   * judged once the authenticator answers. An authenticator with `onRevocation` (the login
   * protection's) makes the gateway call this by itself. Returns how many connections it closed.
   * @throws {TypeError} when `revocation` is not one of the three shapes
   */
  revoke(revocation: Revocation): number;
  /** What this process carries now and has carried since it was created, for metrics (docs/PROTOCOL.md §18.3). */
  stats(): GatewayStats;
  /**
   * Post an assistant message into a channel (scheduled jobs, webhooks; works in automation
   * channels). It waits its turn in the lane and resolves with the stored message. It always
   * settles: it rejects with a `GatewayError` when the gateway is not running (`unsupported`),
   * when the chat is unknown or deleted before the answer is stored (`not_found`), or when the
   * gateway shuts down before the post ran (`unsupported`); and with the error itself when
   * the answer throws.
   */
  post(owner: Owner, chatId: ChatId, input: PostInput, options?: { threadId?: ChatId | null }): Promise<StoredMessage>;
  /** Send a notification to every device of the owner, store it in the outbox, push it when no device is connected. */
  notify(owner: Owner, input: NotifyInput): Promise<Seq>;
  /**
   * Store earlier messages of a conversation in a lane, in order, without running a turn (a door's
   * forked conversation, docs/PROTOCOL.md §19); every device sees them as stored `message` frames.
   * Rejects with `not_found` for an unknown lane and `unsupported` for an automation channel.
   */
  importMessages(owner: Owner, lane: Lane, messages: readonly ImportedMessage[]): Promise<StoredMessage[]>;
  /**
   * Redeem an action token of an ask's push (docs/PROTOCOL.md §21; `createAskActionHandler` of
   * `chat-gateway/doors` serves it as `POST /api/asks/{picker_id}/act`): 200 with the
   * `picker.resolved` payload when its answer stands, 410 when the ask ended otherwise, 401 for
   * any token that is not good for this ask (or for `optionId`, when given). Never logs the token.
   */
  actOnAsk(pickerId: string, token: unknown, optionId?: string): Promise<AskActionOutcome>;
  /** Server-side channel management. */
  readonly channels: ChannelApi;
  /** The slash-command registry (register plugin commands here). */
  readonly commands: CommandRegistry;
  /** The owners' schedules (docs/PROTOCOL.md §17); a gateway created with `scheduler` runs them. */
  readonly schedules: ScheduleApi;
  /** The resolved options (limits as `hello.ok` announces them). */
  readonly options: Readonly<ResolvedOptions>;
}

/**
 * Create a gateway.
 *
 * @example
 * ```ts
 * import http from "node:http";
 * import { createGateway } from "chat-gateway";
 * import { memoryStorage } from "chat-gateway/storage/memory";
 * import { demoRuntime } from "chat-gateway/runtime/demo";
 * import { attachWebSocket } from "chat-gateway/ws";
 *
 * const gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime() });
 * await gateway.start();
 * const server = http.createServer();
 * attachWebSocket(gateway, { server, path: "/ws/gateway" });
 * server.listen(8787, "127.0.0.1");
 * ```
 */
export function createGateway(options: GatewayOptions): Gateway {
  return new ChatGateway(options);
}

type Lifecycle = "new" | "starting" | "running" | "closing" | "closed";

/** The gateway behind {@link createGateway}; internal state stays in private fields. */
class ChatGateway extends EventEmitter<GatewayEvents> implements Gateway {
  readonly options: Readonly<ResolvedOptions>;
  readonly commands: CommandRegistry;
  readonly channels: ChannelApi;
  readonly schedules: ScheduleApi;
  readonly #services: SessionServices;
  readonly #scheduler: Scheduler;
  readonly #outbox: Outbox;
  readonly #bus: Bus;
  #state: Lifecycle = "new";
  /** 1001, or 1012 once draining (docs/PROTOCOL.md §18). */
  #closeCode: number = CLOSE_CODES.goingAway;
  /** Recovers the turns a crash left (docs/PROTOCOL.md §4.2), at start and, with a lane lock, every `recoveryIntervalMs`. */
  readonly #recovery: TurnRecovery;
  #stopRecovery: (() => void) | undefined;
  /** Starts the passes over stored pushes (docs/PROTOCOL.md §21.6), and what stops them. */
  readonly #startOverdue: () => () => void;
  #stopOverdue: (() => void) | undefined;
  readonly #sessions = new Map<string, DeviceSession>();
  /** Server-side posts and notifications in flight, awaited by close(). */
  readonly #background = new Set<Promise<unknown>>();
  readonly #unsubscribe: (() => void) | undefined;

  constructor(options: GatewayOptions) {
    super();
    const resolved = resolveOptions(options);
    this.options = resolved;
    this.commands = createCommandRegistry(resolved.runtime, (message) => resolved.logger.warn(message));
    const bus = options.bus ?? memoryBus();
    this.#bus = bus;
    const { services, outbox, sendOverdue } = wireServices(resolved, options, bus, this.commands, this);
    this.#services = services;
    this.#startOverdue = () => startOverduePushes(sendOverdue, resolved);
    this.#outbox = outbox;
    this.#recovery = turnRecovery(services);
    this.#unsubscribe = options.authenticator?.onRevocation?.((revocation) => this.revoke(revocation));
    this.on("disconnect", (info) => this.#sessions.delete(info.connectionId));
    this.channels = {
      create: (owner, input) => createChannel(services, owner, input),
      list: (owner) => listChannels(services, owner),
      update: (owner, chatId, changes) => updateChannel(services, owner, { chat_id: chatId, ...changes }),
      setDefault: (owner, chatId) => setDefault(services, owner, chatId),
      delete: (owner, chatId) => deleteChannel(services, owner, chatId),
    };
    const scheduleStore = this.options.scheduleStore ?? NO_SCHEDULES;
    this.#scheduler = new Scheduler(services, scheduleStore, (owner, notification) => this.notify(owner, notification));
    this.schedules = scheduleApi(services, scheduleStore, this.#scheduler);
  }

  async start(): Promise<void> {
    if (this.#state !== "new") throw new GatewayError("unsupported", "start() was already called");
    this.#state = "starting";
    try {
      await this.#services.storage.open?.();
      await this.#recovery.once();
    } catch (error) {
      // Nothing was accepted yet: a later start() may try again (the database may come up).
      this.#state = "new";
      throw error;
    }
    this.#state = "running";
    this.#outbox.pruneOnSchedule();
    if (this.options.scheduler) this.#scheduler.start(this.options.scheduler.tickMs);
    this.#stopOverdue = this.#startOverdue();
    this.#stopRecovery = this.#recovery.repeat();
  }

  async close(options: CloseOptions = {}): Promise<void> {
    if (this.#state === "closed" || this.#state === "closing") return;
    this.#state = "closing";
    const draining = options.drainMs !== undefined;
    if (draining) this.#closeCode = CLOSE_CODES.serviceRestart;
    this.#stopRecovery?.();
    this.#stopOverdue?.();
    this.#services.admission.close();
    // No slot is claimed from here on; a run already queued drains or ends like any turn.
    await this.#scheduler.stop();
    this.#outbox.stopPruning();
    this.#unsubscribe?.();
    const services = this.#services;
    if (draining) {
      services.lanes.hold();
      await settleWithin(this.options.clock, services.lanes.idle(), Math.max(0, options.drainMs ?? 0));
    }
    services.lanes.abortAll("shutdown");
    // Every aborted turn stores its final frame before the sockets go.
    await settleWithin(this.options.clock, services.lanes.idle(), SHUTDOWN_WAIT_MS);
    await Promise.allSettled([...this.#background]);
    const reason = draining ? "server restarting" : "server shutting down";
    for (const session of [...this.#sessions.values()]) session.close(this.#closeCode, reason);
    await services.storage.close?.();
    await this.#bus.close?.();
    this.#state = "closed";
  }

  accept(connection: Connection): ConnectionHandle {
    const session = new DeviceSession(this.#services, connection);
    if (this.#state !== "running") {
      connection.close(
        this.#closeCode,
        this.#state === "new" || this.#state === "starting" ? "gateway not started" : "server shutting down",
      );
      session.closed();
      return session;
    }
    this.#sessions.set(session.id, session);
    session.open();
    return session;
  }

  admitConnection(request: AdmissionRequest): () => void {
    return this.#services.admission.admit(request);
  }

  revoke(revocation: Revocation): number {
    const checked = checkRevocation(revocation);
    let closed = 0;
    for (const session of [...this.#sessions.values()]) if (session.revoke(checked)) closed++;
    return closed;
  }

  stats(): GatewayStats {
    const waiting = this.#services.admission.waiting();
    const connections = { open: this.#sessions.size, waiting: waiting.connections, hellosWaiting: waiting.hellos };
    return statsOf(connections, this.#services.lanes.counts(), this.#services.traffic);
  }

  post(
    owner: Owner,
    chatId: ChatId,
    input: PostInput,
    postOptions: { threadId?: ChatId | null } = {},
  ): Promise<StoredMessage> {
    const check = () => this.#checkRunning("post");
    return this.#track(post(this.#services, owner, chatId, input, postOptions.threadId, check));
  }

  /** Server-side calls need a started gateway that is not shutting down. */
  #checkRunning(what: string): void {
    if (this.#state === "running") return;
    const why =
      this.#state === "new" || this.#state === "starting"
        ? "the gateway is not started"
        : "the gateway is shutting down";
    throw new GatewayError("unsupported", `${what}: ${why}`);
  }

  async notify(owner: Owner, input: NotifyInput): Promise<Seq> {
    return this.#track(notifyOwner(this.#services, owner, input));
  }

  actOnAsk(pickerId: string, token: unknown, optionId?: string): Promise<AskActionOutcome> {
    this.#checkRunning("actOnAsk");
    return this.#track(redeemActionToken(this.#services, pickerId, token, optionId));
  }

  importMessages(owner: Owner, lane: Lane, messages: readonly ImportedMessage[]): Promise<StoredMessage[]> {
    this.#checkRunning("importMessages");
    return this.#track(importMessages(this.#services, owner, lane, messages));
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#background.add(work);
    void work.finally(() => this.#background.delete(work)).catch(() => undefined);
    return work;
  }
}

/** How long close() waits for running turns to store their final frame (ms). */
const SHUTDOWN_WAIT_MS = 5_000;
