/**
 * The protocol version and its limits: the fixed ones and the defaults of the configurable ones
 * (docs/PROTOCOL.md §8.3). A gateway states the bounds it applies in `hello.ok.limits`.
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
  /**
   * Longest `hello.device_id` and `hello.device_name` (characters): both are stored on the device
   * record and shown to the person (docs/PROTOCOL.md §2.1).
   */
  deviceFieldMax: 128,
  /** Longest channel name, after trimming (characters). */
  channelNameMax: 100,
  /** Largest channel icon, decoded (bytes). */
  iconMaxBytes: 256 * 1024,
  /** Longest search snippet (characters). */
  snippetMax: 200,
  /**
   * Matches a search ranks per step (every word, then any word): the newest this many in scope, so
   * that a common word costs the same at any history size (docs/PROTOCOL.md §5).
   */
  searchCandidates: 1000,
  /**
   * Bytes after which a storage ends a `history` or outbox page early (the JSON of its messages or
   * frames); the caller pages on. One page then holds at most this plus one row, however long the
   * messages are (docs/PROTOCOL.md §5).
   */
  storagePageBytes: 1024 * 1024,
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
