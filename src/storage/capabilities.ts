/**
 * The table of storage capabilities: for each, the members that declare it, the core's fallback
 * when it is missing, and the gateway options that cannot work without it. Adding an optional
 * storage member is adding a row here, its TSDoc on `StorageImplementation` and its block in the
 * conformance kit.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { GatewayOptions } from "../options/options.js";
import { isInProcessBus } from "../contracts/bus.js";
import type { Storage, StorageCapabilities, StorageImplementation } from "../contracts/storage.js";
import { scanForClientMsgId, scanSearch } from "./lane-scan.js";

/** The members a storage may leave out. */
export type OptionalMember =
  | "getChannel"
  | "getDevice"
  | "findByClientMsgId"
  | "search"
  | "pruneOutbox"
  | "unfinishedMessages"
  | "waitingTurns"
  | "getMedia"
  | "putMedia"
  | "deleteMedia"
  | "adoptOwner"
  | "readMarks"
  | "unreadCounts";

/** The required core: a storage without one of these is refused by `defineStorage`. */
export const REQUIRED_MEMBERS = [
  "commit",
  "getMessage",
  "history",
  "listChannels",
  "readOutbox",
  "outboxBounds",
  "listDevices",
  "putDevice",
] as const;

type Core = Pick<StorageImplementation, (typeof REQUIRED_MEMBERS)[number]>;

/** One capability: how it is declared, what stands in for it, what needs it. */
export interface CapabilitySpec {
  name: keyof StorageCapabilities;
  /** Members that declare it together; empty for a guarantee declared in `capabilities`. */
  members: readonly OptionalMember[];
  /** The core's stand-in when it is not declared; absent when there is none. */
  fallback?: (core: Core) => Partial<Pick<Storage, OptionalMember>>;
  /** Why `createGateway` with these options cannot run without it; undefined when it can. */
  neededBy?: (options: GatewayOptions) => string | undefined;
}

export const STORAGE_CAPABILITIES: readonly CapabilitySpec[] = [
  {
    name: "getChannel",
    members: ["getChannel"],
    fallback: (core) => ({
      getChannel: async (owner, chatId) => (await core.listChannels(owner)).find((c) => c.chat_id === chatId),
    }),
  },
  {
    name: "getDevice",
    members: ["getDevice"],
    fallback: (core) => ({
      getDevice: async (owner, deviceId) => (await core.listDevices(owner)).find((d) => d.device_id === deviceId),
    }),
  },
  {
    name: "findByClientMsgId",
    members: ["findByClientMsgId"],
    fallback: (core) => ({ findByClientMsgId: (owner, chatId, key) => scanForClientMsgId(core, owner, chatId, key) }),
  },
  {
    name: "search",
    members: ["search"],
    fallback: (core) => ({ search: (owner, query) => scanSearch(core, owner, query) }),
  },
  {
    name: "pruneOutbox",
    members: ["pruneOutbox"],
    fallback: () => ({ pruneOutbox: async () => undefined }),
  },
  {
    name: "unfinishedMessages",
    members: ["unfinishedMessages"],
    fallback: () => ({ unfinishedMessages: async () => [] }),
  },
  {
    name: "waitingTurns",
    members: ["waitingTurns"],
    fallback: () => ({ waitingTurns: async () => [] }),
  },
  {
    name: "media",
    members: ["getMedia", "putMedia", "deleteMedia"],
    fallback: () => ({
      getMedia: async () => undefined,
      putMedia: async () => {
        throw new GatewayError("unsupported", "this storage keeps no media metadata: media is not available");
      },
      deleteMedia: async () => undefined,
    }),
    neededBy: (options) =>
      options.mediaStore
        ? "options.mediaStore needs a storage with the media capability (getMedia, putMedia, deleteMedia): the gateway keeps each upload's owner, size, checksum and holding message there"
        : undefined,
  },
  {
    name: "adoptOwner",
    members: ["adoptOwner"],
    fallback: () => ({
      adoptOwner: async () => {
        throw new GatewayError(
          "unsupported",
          "this storage cannot move one owner's data to another (it lacks the adoptOwner capability)",
        );
      },
    }),
  },
  {
    name: "readState",
    members: ["readMarks", "unreadCounts"],
    fallback: () => ({ readMarks: async () => [], unreadCounts: async () => [] }),
  },
  {
    name: "uniqueClientMsgId",
    members: [],
    neededBy: (options) =>
      options.bus && !isInProcessBus(options.bus)
        ? "options.bus shares this storage with other processes, which needs the uniqueClientMsgId capability (declare capabilities: { uniqueClientMsgId: true } on a storage whose commit refuses a second message with the same client_msg_id in a chat, atomically across processes): without it a retried message.send taken by two processes at once is stored twice"
        : undefined,
  },
  {
    name: "fencing",
    members: [],
    neededBy: (options) =>
      options.laneLock
        ? "options.laneLock shares lanes with other processes, which needs the fencing capability (declare capabilities: { fencing: true } on a storage whose commit honours Change.takeLane and Change.fence atomically across processes): without it a process that lost a lane's lease while paused goes on writing its answer"
        : undefined,
  },
];

/** Throws the `TypeError` of the first capability these options need and the storage lacks. */
export function refuseMissingCapabilities(storage: Storage, options: GatewayOptions): void {
  for (const spec of STORAGE_CAPABILITIES) {
    const reason = storage.capabilities[spec.name] ? undefined : spec.neededBy?.(options);
    if (reason) throw new TypeError(`createGateway: ${reason}`);
  }
}
