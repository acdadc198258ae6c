/**
 * Protocol constants: the version, the limits (docs/PROTOCOL.md §8) and the frame types the
 * gateway sends (docs/PROTOCOL.md §1).
 * @module
 */

/** The frame protocol version this gateway speaks (`hello.ok.protocol`). */
export const PROTOCOL_VERSION = 1;

/** Limits fixed by the protocol, and the defaults of the configurable ones. */
export const LIMITS = {
  historyDefault: 50,
  historyMax: 200,
  searchDefault: 20,
  searchMax: 100,
  /** Text frames above this close the connection with 1009 (bytes). */
  maxFrameBytes: 1024 * 1024,
  /** Media upload limit (bytes). */
  maxMediaBytes: 50 * 1024 * 1024,
  /** Largest binary media chunk (bytes). */
  mediaChunkBytes: 256 * 1024,
  /** Longest channel name, after trimming (characters). */
  channelNameMax: 100,
  /** Largest channel icon, decoded (bytes). */
  iconMaxBytes: 256 * 1024,
  /** Longest search snippet (characters). */
  snippetMax: 200,
  /** Largest `history` page, in bytes of message JSON (default of `historyMaxBytes`). */
  historyMaxBytes: 512 * 1024,
  /** `media.pull`s in flight per connection (default of `maxPullsPerConnection`). */
  pullsInFlight: 2,
  /** Time a connection has to complete `hello` (milliseconds, default of `helloTimeoutMs`). */
  helloTimeoutMs: 10_000,
  /** Connections per owner in one process (default of `maxConnectionsPerOwner`). */
  connectionsPerOwner: 32,
  /** Connections per client address in one process (default of `maxConnectionsPerIp`). */
  connectionsPerIp: 64,
} as const;

/**
 * The frames the gateway stores in the owner's outbox: they carry a `seq` and `sync` replays them
 * (docs/PROTOCOL.md §5). Every other gateway frame is live only.
 */
export const STORED_FRAME_TYPES = [
  "message",
  "message.stop",
  "message.deleted",
  "channel.created",
  "channel.renamed",
  "channel.deleted",
  "notification",
  "media.offer",
  "picker.approval",
  "picker.confirm",
  "picker.model",
  "picker.resolved",
] as const;

/** The type name of a frame the gateway stores in the outbox. */
export type StoredFrameType = (typeof STORED_FRAME_TYPES)[number];

/**
 * Every frame type the gateway sends to a device (docs/PROTOCOL.md §1), the stored ones included.
 * The gateway's sending code accepts only these names, so a new frame type starts here.
 */
export const SERVER_FRAME_TYPES = [
  "hello.ok",
  ...STORED_FRAME_TYPES,
  "message.start",
  "message.update",
  "commentary",
  "tool.start",
  "tool.end",
  "typing",
  "channel.list",
  "history",
  "search.results",
  "commands.catalog",
  "media.upload.ack",
  "media.pull.end",
  "sync.done",
  "commands.complete",
  "pong",
  "error",
] as const;

/**
 * The extensions this gateway honours, listed in `hello.ok.features` (docs/PROTOCOL.md §2) so a
 * client can tell before it relies on one.
 */
export const FEATURES: readonly string[] = [
  "pickers",
  "commands.complete",
  "client_msg_id",
  "channel.create",
  "channel.update",
  "channel.delete",
  "caps.streaming",
  "sync.reset",
];

/** The frames of docs/PROTOCOL.md §11 that only a device with `caps.pickers` receives. */
export const PICKER_FRAME_TYPES: ReadonlySet<string> = new Set(["picker.approval", "picker.confirm", "picker.model", "picker.resolved"]);

/** The type name of a gateway → client frame. */
export type ServerFrameType = (typeof SERVER_FRAME_TYPES)[number];

/** A gateway → client frame as the gateway builds it: a known type and its payload. */
export interface ServerFrame {
  type: ServerFrameType;
  payload: Record<string, unknown>;
}

/** A frame bound for the outbox (it gets a `seq` when stored). */
export interface StoredFrame extends ServerFrame {
  type: StoredFrameType;
}
