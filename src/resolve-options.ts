/**
 * The options of {@link createGateway} checked and completed with their defaults: a misconfigured
 * gateway throws `TypeError` at construction rather than failing on its first connection.
 * @module
 */
import type { GatewayOptions, ResolvedOptions } from "./options/options.js";
import { resolveLogger } from "./contracts/logger.js";
import { LIMITS } from "./protocol/limits.js";
import { defineStorage } from "./storage/define-storage.js";
import { refuseMissingCapabilities } from "./storage/capabilities.js";
import { publicUrlOf } from "./push/public-url.js";
import type { Storage } from "./contracts/storage.js";
import type { RateLimit } from "./connection/token-bucket.js";
import { realClock, type Clock } from "./support/clock.js";

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw new TypeError(`createGateway: ${name} must be a positive number, got ${String(value)}`);
  return value;
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
    throw new TypeError(`createGateway: ${name} must be a number of 0 or more, got ${String(value)}`);
  return value;
}

function resolveRate(name: string, given: RateLimit | undefined, fallback: RateLimit): RateLimit {
  return {
    perSecond: positive(`${name}.perSecond`, given?.perSecond, fallback.perSecond),
    burst: positive(`${name}.burst`, given?.burst, fallback.burst),
  };
}

/** The budgets shared by several connections (docs/PROTOCOL.md §2.4): per address, per owner, and the rate of new connections. */
function resolveSharedRates(
  options: GatewayOptions,
  rateLimit: RateLimit,
  maxConnectionsPerIp: number,
): Pick<ResolvedOptions, "rateLimitPerAddress" | "rateLimitPerOwner" | "connectRateLimit"> {
  const shared = { perSecond: rateLimit.perSecond * 5, burst: rateLimit.burst * 5 };
  return {
    rateLimitPerAddress: resolveRate("rateLimitPerAddress", options.rateLimitPerAddress, shared),
    rateLimitPerOwner: resolveRate("rateLimitPerOwner", options.rateLimitPerOwner, shared),
    connectRateLimit: resolveRate("connectRateLimit", options.connectRateLimit, {
      perSecond: 20,
      burst: Math.max(64, maxConnectionsPerIp),
    }),
  };
}

function resolveBackpressure(given: GatewayOptions["backpressure"]): ResolvedOptions["backpressure"] {
  const softBytes = positive("backpressure.softBytes", given?.softBytes, 1024 * 1024);
  const hardBytes = positive("backpressure.hardBytes", given?.hardBytes, 16 * 1024 * 1024);
  if (hardBytes < softBytes)
    throw new TypeError(
      `createGateway: backpressure.hardBytes (${hardBytes}) must not be below softBytes (${softBytes})`,
    );
  return { softBytes, hardBytes };
}

function wholePositive(name: string, value: number | undefined, fallback: number): number {
  const resolved = positive(name, value, fallback);
  if (!Number.isInteger(resolved))
    throw new TypeError(`createGateway: ${name} must be a whole number, got ${String(value)}`);
  return resolved;
}

/** `options.storage` normalised, refused when these options need a capability it lacks. */
/** The push options: senders, when to push, retries, and where pushes lead (docs/PROTOCOL.md §21). */
function resolvePush(
  options: GatewayOptions,
): Pick<ResolvedOptions, "push" | "pushAfterMs" | "publicUrl" | "pushRetry"> {
  return {
    push: options.push ?? [],
    pushAfterMs: nonNegative("pushAfterMs", options.pushAfterMs, 60_000),
    publicUrl: publicUrlOf(options.publicUrl),
    pushRetry: { attempts: options.pushRetry?.attempts ?? 3, backoffMs: options.pushRetry?.backoffMs ?? 1_000 },
  };
}

function resolveStorage(options: GatewayOptions): Storage {
  if (!options.storage || typeof options.storage !== "object") {
    throw new TypeError(
      "createGateway: options.storage must implement Storage (for example memoryStorage() from chat-gateway/storage/memory)",
    );
  }
  let storage: Storage;
  try {
    storage = defineStorage(options.storage);
  } catch (error) {
    throw new TypeError(`createGateway: options.storage: ${(error as Error).message}`, { cause: error });
  }
  refuseMissingCapabilities(storage, options);
  return storage;
}

/**
 * What stored records are dated by: a given clock's time, so that a test on a manual clock sees
 * the dates it moved to; else the system's epoch time as before (the real clock's is monotonic,
 * and drifts from the wall over a long run).
 */
function nowOf(clock: Clock | undefined): () => number {
  return clock ? () => clock.now() : Date.now;
}

const HOOK_STORE_MEMBERS = ["putHook", "getHook", "listHooks", "deleteHook", "claimHookKey", "settleHookKey"];
const SCHEDULE_STORE_MEMBERS = [
  "putSchedule",
  "listSchedules",
  "allSchedules",
  "deleteSchedule",
  "claimScheduleSlot",
  "recordScheduleRun",
];

/** A store option checked for every member of its contract: a missing one is named now, not at the first post. */
function checkedStore<T>(name: string, contract: string, given: T | undefined, members: string[]): T | undefined {
  if (given === undefined) return undefined;
  const missing = members.filter((m) => typeof (given as Record<string, unknown> | null)?.[m] !== "function");
  if (missing.length > 0)
    throw new TypeError(`createGateway: options.${name} must implement ${contract}; missing ${missing.join(", ")}`);
  return given;
}

/** The stores of webhooks and schedules, and the scheduler, which cannot run without the latter. */
function resolveAutomation(
  options: GatewayOptions,
): Pick<ResolvedOptions, "hookStore" | "scheduleStore" | "scheduler"> {
  const hookStore = checkedStore("hookStore", "HookStore", options.hookStore, HOOK_STORE_MEMBERS);
  const scheduleStore = checkedStore("scheduleStore", "ScheduleStore", options.scheduleStore, SCHEDULE_STORE_MEMBERS);
  if (options.scheduler && !scheduleStore)
    throw new TypeError(
      "createGateway: options.scheduler needs options.scheduleStore, where each slot is claimed so that it runs once across processes (the built-in storages are one: scheduleStore: storage)",
    );
  const tickMs = options.scheduler === true ? undefined : options.scheduler ? options.scheduler.tickMs : undefined;
  return {
    hookStore,
    scheduleStore,
    scheduler: options.scheduler ? { tickMs: positive("scheduler.tickMs", tickMs, 1_000) } : undefined,
  };
}

/** `options` checked, with every default filled in. */
export function resolveOptions(options: GatewayOptions): ResolvedOptions {
  if (!options || typeof options !== "object")
    throw new TypeError("createGateway: options are required ({ storage, runtime })");
  const { runtime } = options;
  const storage = resolveStorage(options);
  if (!runtime || typeof runtime.turn !== "function")
    throw new TypeError("createGateway: options.runtime must implement AgentRuntime (a turn(input) method)");
  if (options.push && !options.push.every((s) => typeof s.send === "function" && typeof s.accepts === "function")) {
    throw new TypeError("createGateway: every options.push entry must implement PushSender (accepts, send)");
  }
  const limit = options.rateLimit ?? { perSecond: 20, burst: 60 };
  const rateLimit = {
    perSecond: positive("rateLimit.perSecond", limit.perSecond, 20),
    burst: positive("rateLimit.burst", limit.burst, 60),
  };
  const maxConnectionsPerIp = positive("maxConnectionsPerIp", options.maxConnectionsPerIp, LIMITS.connectionsPerIp);
  const logger = resolveLogger("createGateway", "[chat-gateway]", options.logger);
  if (!storage.capabilities.unfinishedMessages) {
    logger.info(
      "the storage has no unfinishedMessages(): an answer streaming when the process stops stays streaming after a restart",
    );
  }
  return {
    storage,
    runtime,
    mediaStore: options.mediaStore,
    laneLock: options.laneLock,
    streaming: options.streaming ?? true,
    maxFrameBytes: positive("maxFrameBytes", options.maxFrameBytes, LIMITS.maxFrameBytes),
    maxMediaBytes: positive("maxMediaBytes", options.maxMediaBytes, LIMITS.maxMediaBytes),
    searchMax: positive("searchMax", options.searchMax, LIMITS.searchMax),
    rateLimit,
    ...resolveSharedRates(options, rateLimit, maxConnectionsPerIp),
    maxUploadsPerConnection: positive("maxUploadsPerConnection", options.maxUploadsPerConnection, 4),
    maxPullsPerConnection: positive("maxPullsPerConnection", options.maxPullsPerConnection, LIMITS.pullsInFlight),
    helloTimeoutMs: positive("helloTimeoutMs", options.helloTimeoutMs, LIMITS.helloTimeoutMs),
    maxConnectionsPerOwner: positive(
      "maxConnectionsPerOwner",
      options.maxConnectionsPerOwner,
      LIMITS.connectionsPerOwner,
    ),
    maxConnectionsPerIp,
    // 128, not 256: the connections waiting for room no longer shrink with it, and at 256 another
    // connection's ping p99 in a 15,000-device storm was 45 to 56 ms, at 128 about 20, the storm
    // and the hellos as fast (bench/NOTES.md "Fewer hellos at once, many waiting").
    maxHellosInFlight: wholePositive("maxHellosInFlight", options.maxHellosInFlight, 128),
    maxConnectionsWaiting: wholePositive("maxConnectionsWaiting", options.maxConnectionsWaiting, 16_384),
    historyMaxBytes: positive("historyMaxBytes", options.historyMaxBytes, LIMITS.historyMaxBytes),
    maxTurnsPerOwner: positive("maxTurnsPerOwner", options.maxTurnsPerOwner, 16),
    turnTimeoutMs: positive("turnTimeoutMs", options.turnTimeoutMs, 120_000),
    maxAnswerChars: wholePositive("maxAnswerChars", options.maxAnswerChars, 262_144),
    maxTurnMs: positive("maxTurnMs", options.maxTurnMs, 600_000),
    askExpiresMs: Math.min(positive("askExpiresMs", options.askExpiresMs, 600_000), 24 * 3600 * 1000),
    historyTurns: options.historyTurns ?? 20,
    updateIntervalMs: options.updateIntervalMs ?? 50,
    deltaUpdateIntervalMs: nonNegative("deltaUpdateIntervalMs", options.deltaUpdateIntervalMs, 100),
    checkpointIntervalMs: positive("checkpointIntervalMs", options.checkpointIntervalMs, 2_000),
    retention: {
      maxFrames: options.retention?.maxFrames ?? 10_000,
      maxAgeMs: options.retention?.maxAgeMs ?? 30 * 24 * 3600 * 1000,
    },
    backpressure: resolveBackpressure(options.backpressure),
    runtimeInfo: options.runtimeInfo ?? {},
    ...resolvePush(options),
    recoveryIntervalMs: positive("recoveryIntervalMs", options.recoveryIntervalMs, 5_000),
    ...resolveAutomation(options),
    logger,
    clock: options.clock ?? realClock,
    now: options.now ?? nowOf(options.clock),
  };
}
