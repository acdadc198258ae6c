/**
 * The conformance suites of the contracts a user may implement, for anyone who writes an
 * implementation of their own: the built-in adapters run the same suites. Each function declares
 * vitest tests, so call it at the top level of a test file and run it with vitest (an optional
 * peer dependency, needed only for this entry):
 *
 * ```ts
 * import { describeStorageConformance, describeBusConformance } from "chat-gateway/testing";
 * import { myStorage, myBus } from "./my-adapters.js";
 * describeStorageConformance("my storage", () => myStorage());
 * describeBusConformance("my bus", () => ({ bus: myBus(), peer: myBus() }));
 * ```
 *
 * One suite per contract: {@link Storage}, {@link HookStore}, {@link ScheduleStore}, {@link MediaStore},
 * {@link Bus}, {@link SessionStore},
 * the login lockout store, {@link LaneLock}, {@link Connection} (a transport) and
 * {@link AgentRuntime}. An implementation that passes its suite can back a gateway: everything the
 * gateway relies on is checked there. The Connection and AgentRuntime suites start a real gateway
 * (and, for runtimes, a WebSocket server on 127.0.0.1) with `ws`, which comes with chat-gateway.
 *
 * For tests of a gateway's timing, {@link manualClock} is a clock moved by hand
 * (`GatewayOptions.clock`): a test advances it and asserts order and counts instead of waiting.
 * @module
 */
// biome-ignore lint/correctness/noUnusedImports: imported for the links above; the contracts these suites check live in the core entry
import type { AgentRuntime, Bus, Connection, LaneLock, MediaStore, SessionStore } from "chat-gateway";
// biome-ignore lint/correctness/noUnusedImports: imported for the links above; the storage contracts live in the storage kit
import type { HookStore, ScheduleStore, Storage } from "chat-gateway/storage";
export {
  describeStorageConformance,
  type StorageConformanceOptions,
  type StorageFactory,
  type StorageUnderTest,
} from "./storage.js";
export { describeActionTokenConformance } from "./storage-action-tokens.js";
export { describeDuePushConformance } from "./storage-due-pushes.js";
export {
  describeHookStoreConformance,
  type HookStoreFactory,
  type HookStoreUnderTest,
} from "./hook-store.js";
export {
  describeScheduleStoreConformance,
  type ScheduleStoreFactory,
  type ScheduleStoreUnderTest,
} from "./schedule-store.js";
export { describeMediaStoreConformance, type MediaStoreFactory } from "./media-store.js";
export { describeBusConformance, type BusFactory, type BusUnderTest } from "./bus.js";
export {
  describeSessionStoreConformance,
  type SessionStoreFactory,
  type SessionStoreUnderTest,
} from "./session-store.js";
export {
  describeLockoutStoreConformance,
  type LockoutStoreFactory,
  type LockoutStoreUnderTest,
} from "./lockout-store.js";
export { describeLaneLockConformance, type LaneLockFactory, type LaneLockUnderTest } from "./lane-lock.js";
export {
  describeAgentRuntimeConformance,
  type RuntimeFactory,
  type RuntimeScenario,
  type RuntimeUnderTest,
  type RuntimeConformanceOptions,
} from "./runtime.js";
export { webSocketClient, type ClientSocket } from "./client-socket.js";
export { manualClock, type ManualClock } from "./manual-clock.js";
export { describeConnectionConformance, type TransportFactory, type TransportUnderTest } from "./connection.js";
