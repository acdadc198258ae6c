/**
 * The counters a Redis bus keeps of what it did.
 * @module
 */

/** What a {@link redisBus} did, for tests and metrics. */
export interface RedisBusStats {
  /** Messages published to Redis. */
  published: number;
  /** Messages received from other processes and delivered here. */
  received: number;
  /** Live frames dropped because Redis was unreachable. */
  dropped: number;
  /** Stored frames re-sent or re-read after an outage. */
  recovered: number;
  /** Messages that arrived on this process's subscription, its own and undelivered ones included. */
  arrived: number;
  /** Their size in bytes, as Redis sent them. */
  arrivedBytes: number;
  /** Channels this process is subscribed to now. */
  channels: number;
  /** Commands sent to Redis to subscribe, unsubscribe and announce presence. */
  commands: number;
}
