/**
 * The bus's messages on Redis: their format (a header line the receiver reads before the frame),
 * publishing them, with stored frames kept while the link is down and sent, in order, when it is
 * back, and receiving them.
 * @module
 */
import type { RedisClient } from "chat-gateway/redis";
import type { BusMessage, OutgoingFrame, Owner } from "chat-gateway";
import type { RedisBusStats } from "./stats.js";

/** The wire text of a message: `[origin, owner]` on a line of its own, then the frame. */
export function encode(origin: string, message: BusMessage): string {
  // Header on a line of its own, so a process with no device of the owner skips parsing the frame.
  return `${JSON.stringify([origin, message.owner])}\n${JSON.stringify(message.frame)}`;
}

/** The header of a message, or undefined when it is not one of the bus's. */
function decodeHeader(data: Buffer): { origin: string; owner: Owner; rest: Buffer } | undefined {
  const cut = data.indexOf(10);
  if (cut < 0) return undefined;
  try {
    const [origin, owner] = JSON.parse(data.subarray(0, cut).toString()) as [string, Owner];
    return { origin, owner, rest: data.subarray(cut + 1) };
  } catch {
    return undefined;
  }
}

/** The frame after the header, or undefined when it does not parse. */
function decodeFrame(rest: Buffer): OutgoingFrame | undefined {
  try {
    return JSON.parse(rest.toString()) as OutgoingFrame;
  } catch {
    return undefined;
  }
}

/**
 * The handler of messages arriving on the subscription: counts them, skips this process's own
 * (`origin`) and those of owners with no subscriber here before parsing the frame, delivers the rest.
 */
export function receiver(
  origin: string,
  stats: RedisBusStats,
  accepts: { channel(name: string): boolean; owner(owner: Owner): boolean },
  deliver: (message: BusMessage) => void,
): (channel: Buffer, data: Buffer) => void {
  return (channel, data) => {
    if (!accepts.channel(channel.toString())) return;
    stats.arrived++;
    stats.arrivedBytes += data.length;
    const header = decodeHeader(data);
    if (!header || header.origin === origin || !accepts.owner(header.owner)) return;
    const frame = decodeFrame(header.rest);
    if (!frame) return;
    stats.received++;
    // `except` names a connection of the publishing process; connection ids are only unique per
    // process, so here it could name an unrelated device. Every device here gets the frame.
    deliver({ owner: header.owner, frame });
  };
}

/** Sends messages; `close()` stops re-sending kept ones. */
export interface Publisher {
  send(channel: string, text: string, stored: boolean): void;
  close(): void;
}

/**
 * Publishes on `redis` (SPUBLISH when `sharded`). While it is not ready, live frames are dropped
 * and stored ones kept, up to `maxPending` (the oldest go first), until it is ready again.
 */
export function publisher(
  redis: RedisClient,
  sharded: boolean,
  maxPending: number,
  stats: RedisBusStats,
  warn: (message: string) => void,
): Publisher {
  /** Stored frames that could not be published, oldest first: channel and text. */
  const pending: [string, string][] = [];
  function send(channel: string, text: string, stored: boolean): void {
    if (redis.status !== "ready") {
      if (!stored) {
        stats.dropped++;
        return;
      }
      pending.push([channel, text]);
      if (pending.length > maxPending) {
        pending.shift();
        stats.dropped++;
      }
      return;
    }
    stats.published++;
    (sharded ? redis.spublish(channel, text) : redis.publish(channel, text)).catch((error: Error) => {
      stats.dropped++;
      warn(`publish failed: ${error.message}`);
    });
  }
  // The publishing link is back: what was kept goes out first, in order.
  const flush = () => {
    const kept = pending.splice(0);
    if (kept.length) stats.recovered += kept.length;
    for (const [channel, text] of kept) send(channel, text, true);
  };
  redis.on("ready", flush);
  return { send, close: () => redis.off("ready", flush) };
}
