/**
 * The options of {@link createGateway} and their defaults.
 * @module
 */
import type { Authenticator } from "../contracts/authenticator.js";
import type { Bus } from "../contracts/bus.js";
import type { LaneLock } from "../contracts/lane-lock.js";
import type { MediaStore } from "../contracts/media-store.js";
import type { PushSender } from "../contracts/push.js";
import type { AgentRuntime } from "../contracts/runtime.js";
import type { RetentionPolicy, Storage, StorageImplementation } from "../contracts/storage.js";
import type { Logger } from "../contracts/logger.js";
import type { Clock } from "../support/clock.js";
import type { HookStore } from "../contracts/hooks.js";
import type { ScheduleStore } from "../contracts/schedules.js";

/**
 * Price of a model, USD per million tokens: what the gateway's `runtimeInfo.prices` holds per
 * model, and what the `prices` option of both runtime bindings takes.
 *
 * @example
 * ```ts
 * const prices: ModelPrice = { input: 0.15, output: 0.6 }; // gpt-4o-mini
 * ```
 */
export interface ModelPrice {
  input: number;
  output: number;
}

/** Gateway-side settings that complete what a runtime reports. */
export interface RuntimeInfoOptions {
  /** Context window in tokens, for `context_pct` when the runtime does not report one; a number or per bare model id. */
  contextWindow?: number | ((model: string | undefined) => number | undefined);
  /** Prices by bare model id, for `cost` when the runtime reports none. */
  prices?: Record<string, ModelPrice>;
  /** The agent's working directory when the runtime does not report one. */
  cwd?: string;
  /** Home folder used to make `cwd` home-relative; defaults to the process's. */
  home?: string;
}

/** Rate limit settings. */
export interface RateLimit {
  /** Sustained frames per second. */
  perSecond: number;
  /** Frames allowed in a burst. */
  burst: number;
}

export type { Logger } from "../contracts/logger.js";

/** Options of {@link createGateway}. Only `storage` and `runtime` are required. */
export interface GatewayOptions {
  /**
   * Channels, messages, outbox, devices, media metadata: a built-in storage, or your own
   * implementation (normalised with `defineStorage()` here if you have not done it). Options that
   * need a capability it lacks throw a `TypeError` naming it: a `mediaStore` needs `media`, a
   * `bus` other than `memoryBus()` needs `uniqueClientMsgId`.
   */
  storage: StorageImplementation;
  /** The agent. */
  runtime: AgentRuntime;
  /** Turns `hello.token` into an owner. Default: {@link openAuthenticator} (no login, one anonymous owner). */
  authenticator?: Authenticator;
  /** Fan-out between processes. Default: the in-process {@link memoryBus}. */
  bus?: Bus;
  /** Media bytes. Without it, media frames answer `unsupported`. */
  mediaStore?: MediaStore;
  /**
   * Where webhooks are kept (docs/PROTOCOL.md §17): `createHookHandler` and `addHook` of
   * `chat-gateway/hooks` need it. The built-in storages are one, so `hookStore: storage` keeps them
   * in the same database. Without it the hook route answers 404 and `addHook` refuses `unsupported`.
   */
  hookStore?: HookStore;
  /**
   * Where schedules are kept (docs/PROTOCOL.md §17.3): `gateway.schedules` manages them there, and
   * the `scheduler` option needs it. The built-in storages are one (`scheduleStore: storage`).
   * Without it `gateway.schedules` lists none and refuses `add` with `unsupported`.
   */
  scheduleStore?: ScheduleStore;
  /** One turn at a time per lane across processes (several gateways on one storage). Not needed for one process. */
  laneLock?: LaneLock;
  /** Push senders, tried in order for each device with a push target. */
  push?: PushSender[];
  /** Gateway-side streaming setting for this platform (default true). False: one `message` per answer. */
  streaming?: boolean;
  /** Largest text frame in bytes (default 1 MiB); larger closes the connection with 1009. */
  maxFrameBytes?: number;
  /** Largest media item in bytes (default 50 MiB). */
  maxMediaBytes?: number;
  /** Largest search page (default 100). */
  searchMax?: number;
  /**
   * Per-connection frame budget (default 20/s sustained, burst 60), from the first frame on (`hello`
   * included). Chunks of an upload in flight do not count; any other binary message does, and
   * past the budget it is dropped without a reply.
   */
  rateLimit?: RateLimit;
  /**
   * Frame budget shared by every connection from one client address in this process (default five
   * times `rateLimit`: 100/s, burst 300), so a client cannot refill its budget by reconnecting.
   * Counted like `rateLimit`, `hello` included; past it a frame is refused the same way.
   */
  rateLimitPerAddress?: RateLimit;
  /** Frame budget shared by every connection of one owner in this process, from after `hello` (default five times `rateLimit`). */
  rateLimitPerOwner?: RateLimit;
  /**
   * New connections per client address in this process (default 20/s, burst the larger of 64 and
   * `maxConnectionsPerIp`); one more gets `rate_limited` and close 4429 before it counts anywhere.
   */
  connectRateLimit?: RateLimit;
  /** Uploads in flight per connection (default 4). */
  maxUploadsPerConnection?: number;
  /** `media.pull`s in flight per connection (default 2); one more is `rate_limited`. */
  maxPullsPerConnection?: number;
  /** A connection that has not completed `hello` this long after it opened gets `error auth` and is closed 4408 (milliseconds, default 10,000). */
  helloTimeoutMs?: number;
  /** Connections per owner in this process (default 32); one more gets `rate_limited` and close 4429. */
  maxConnectionsPerOwner?: number;
  /**
   * Connections per client address (`Connection.context.remoteAddress`) in this process (default 64),
   * counted from the moment the socket opens; one more gets `rate_limited` and close 4429.
   */
  maxConnectionsPerIp?: number;
  /**
   * Hellos in progress in this process at once (default 128), from a connection's first frame to
   * its `hello.ok` or refusal. Past it a hello waits for a place, twice this many at most; past
   * those a new connection's first frame gets `rate_limited` and close 1013 with the reason
   * `retry_after_ms=<n>`, a hint of when to come back, so a reconnect storm is shed at once rather
   * than queued until everyone waits (docs/PROTOCOL.md §18.5). Raise
   * it when hellos wait on something slower than this process (an authenticator that asks
   * another service): at most this many per hello's duration are let in.
   */
  maxHellosInFlight?: number;
  /**
   * New connections a transport hands over before their upgrade that may wait for room under
   * `maxHellosInFlight` at once (default 16,384; docs/PROTOCOL.md §18.5). One more is refused with a
   * retry hint. A waiting connection holds its socket and its parsed request.
   */
  maxConnectionsWaiting?: number;
  /**
   * Largest `history` page in bytes of message JSON (default 524,288, half of `maxFrameBytes`'s default): fewer
   * messages come back and `has_more` is true. A single message larger than this is sent alone,
   * its `text` and `reasoning` cut to fit and `truncated: true` set.
   */
  historyMaxBytes?: number;
  /** Turns waiting or running per owner (default 16); one more `message.send` is `rate_limited`. */
  maxTurnsPerOwner?: number;
  /** A turn whose runtime yields nothing for this long is ended as failed (milliseconds, default 120,000). */
  turnTimeoutMs?: number;
  /**
   * Largest answer, in characters (UTF-16 code units) of text plus reasoning (default 262,144).
   * A runtime that says more is stopped there: its iterator is returned, its `signal` aborted (so
   * its model request is), and the answer ends with status `error`, the text up to the limit and a
   * line saying why. The default is far above a long answer (about 64,000 tokens) and keeps each
   * `message.update` under the 1 MiB frame limit that devices commonly apply, even for 3-byte UTF-8 text.
   */
  maxAnswerChars?: number;
  /**
   * Longest turn by the wall clock (milliseconds, default 600,000 = 10 minutes), however busy the
   * runtime keeps it: `turnTimeoutMs` only measures silence. Past it the turn ends like at
   * `maxAnswerChars`, with a line saying why. Raise it for agents whose tool runs take longer.
   */
  maxTurnMs?: number;
  /**
   * How long the person has to answer an ask when the runtime sets no `expiresInMs`
   * (milliseconds, default 600,000 = 10 minutes; at most 24 hours). The turn's idle timeout and
   * wall clock stop while it waits (docs/PROTOCOL.md §11).
   */
  askExpiresMs?: number;
  /** How many earlier messages of the lane a turn receives (default 20). */
  historyTurns?: number;
  /** At most one `message.update` per message per this many milliseconds (default 50). */
  updateIntervalMs?: number;
  /**
   * At most one `message.update` per this many milliseconds to a device that takes delta updates
   * (default 100; docs/PROTOCOL.md §12). Each carries every character since the last one, so
   * nothing is lost: at a model's pace an update's envelope (ids, offset) is longer than 50 ms of
   * text, and the longer interval halves what such a device receives. At or below
   * `updateIntervalMs` it changes nothing.
   */
  deltaUpdateIntervalMs?: number;
  /** A streaming message's text is saved this often, so a crash keeps most of it (milliseconds, default 2,000). */
  checkpointIntervalMs?: number;
  /** Outbox kept per owner (default 10,000 frames, 30 days); pruned every 100 frames an owner stores and hourly, or every `maxAgeMs` when shorter (docs/PROTOCOL.md §5). */
  retention?: Partial<RetentionPolicy>;
  /**
   * Slow consumers: past `softBytes` buffered, a device gets only the latest `message.update` of each
   * message and media pulls wait; past `hardBytes` (every byte queued, text and binary, media
   * chunks included) it is closed with 1013 and catches up with `sync`.
   * Defaults 1 MiB and 16 MiB.
   */
  backpressure?: { softBytes?: number; hardBytes?: number };
  /** Settings that complete the runtime footer (context window, prices, cwd). */
  runtimeInfo?: RuntimeInfoOptions;
  /** Retries of a failed push (default 3) and the first backoff (milliseconds, default 1,000; doubles). */
  pushRetry?: { attempts?: number; backoffMs?: number };
  /**
   * How long a connected device has to read a final answer or an ask before it is pushed anyway
   * (milliseconds, default 60,000; docs/PROTOCOL.md §15). With no device of the owner connected,
   * the push goes at once.
   */
  pushAfterMs?: number;
  /**
   * Where people reach this gateway, an `http:` or `https:` origin with an optional path prefix
   * (`https://chat.example.com`): a push opens its lane there, and an ask's action buttons post to
   * `<publicUrl>/api/asks/{picker_id}/act` (docs/PROTOCOL.md §21). Default: the origin (the
   * `Origin` header) through which the owner's devices last connected to this process.
   */
  publicUrl?: string;
  /**
   * With a `laneLock`, how often to look for turns that no live job will reach (milliseconds,
   * default 5,000): answers a dead process left streaming are closed as interrupted once their lane
   * is free, and user messages still waiting for their answer (the durable turn queue,
   * docs/PROTOCOL.md §4.2) are taken up by this process. Every gateway also does it once at start.
   * Two indexed reads per look.
   */
  recoveryIntervalMs?: number;
  /**
   * Run the owners' schedules (docs/PROTOCOL.md §17): `true`, or `{ tickMs }`, how often the
   * scheduler reads every schedule and claims the slots that came due (milliseconds, default
   * 1,000; a 6-field cron with seconds needs no coarser tick). Needs a `scheduleStore`, which
   * claims each slot once across processes. Started by `start()`, stopped by `close()`. Default: off, and
   * `gateway.schedules` still manages schedules for a gateway elsewhere that runs them.
   */
  scheduler?: boolean | { tickMs?: number };
  /** Where warnings and errors go. Default: the console, prefixed `[chat-gateway]` (info is dropped). */
  logger?: Logger;
  /**
   * The time and the timers the gateway runs on: turn limits, idle timeouts, answer updates,
   * outflow pacing, the hello timeout, recovery, schedules, pushes due, asks expiring, revocations,
   * the outbox's pruning and admission. For tests and simulations: a manual clock
   * (`manualClock()` from `chat-gateway/testing`) makes "later" a call, so a test asserts order and
   * counts instead of waiting. Its `now()` also dates what is stored, unless `now` is given.
   * Default: the real clock (the process's monotonic time and Node's timers, which hold no process open).
   */
  clock?: Clock;
  /**
   * The time stored records are dated by, epoch milliseconds (for tests). Default: the `clock`'s
   * `now()` when a clock is given, else `Date.now`.
   */
  now?: () => number;
}

/** Options with every default applied. */
export type ResolvedOptions = Required<
  Omit<
    GatewayOptions,
    | "storage"
    | "authenticator"
    | "bus"
    | "mediaStore"
    | "hookStore"
    | "scheduleStore"
    | "push"
    | "retention"
    | "backpressure"
    | "runtimeInfo"
    | "pushRetry"
    | "laneLock"
    | "scheduler"
    | "publicUrl"
  >
> & {
  /** The gateway's public URL without a trailing slash, or undefined (then the origin devices came through). */
  publicUrl: string | undefined;
  /** The scheduler's tick (ms), or undefined when this gateway runs no schedules. */
  scheduler: { tickMs: number } | undefined;
  storage: Storage;
  laneLock: LaneLock | undefined;
  push: PushSender[];
  mediaStore: MediaStore | undefined;
  hookStore: HookStore | undefined;
  scheduleStore: ScheduleStore | undefined;
  retention: RetentionPolicy;
  backpressure: { softBytes: number; hardBytes: number };
  runtimeInfo: RuntimeInfoOptions;
  pushRetry: { attempts: number; backoffMs: number };
};
