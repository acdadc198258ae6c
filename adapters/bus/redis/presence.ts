/**
 * Presence: which processes have a device of an owner connected, for `Bus.connected` (push only to
 * owners away everywhere). Per owner a sorted set of process ids scored by when the entry lapses,
 * so a crashed process drops out by itself.
 * @module
 */
import type { RedisClient } from "chat-gateway/redis";
import type { Owner } from "chat-gateway";

/** A process announces its owners this long (milliseconds); it renews them at a third of it. */
export const PRESENCE_MS = 60_000;

/** One process's entries in the presence sets. */
export interface Presence {
  /** Announce owners that got a first device here, and withdraw those that lost their last one. */
  update(added: Owner[], removed: Owner[]): void;
  /** Whether any process announced the owner and has not lapsed. */
  anywhere(owner: Owner): Promise<boolean>;
  /** Stop renewing and withdraw every owner given. */
  close(owners: Owner[]): Promise<void>;
}

/**
 * Keeps this process's presence entries: `owners()` lists the owners with a device here, renewed
 * every third of {@link PRESENCE_MS} and re-announced when `redis` reconnects. `onCommand` counts the
 * commands sent.
 */
export function presence(
  redis: RedisClient,
  prefix: string,
  origin: string,
  owners: () => Owner[],
  onCommand: (count: number) => void,
): Presence {
  // The key of versions before per-owner channels, so processes of both agree during an upgrade.
  const keyOf = (owner: Owner) => `${prefix}presence:${owner}`;
  // A cluster pipeline must stay in one slot: there each owner's commands go as a pipeline of their own.
  const batches = () => {
    const one = redis.isCluster ? undefined : redis.pipeline();
    return () => one ?? redis.pipeline();
  };
  const send = (pipelines: Iterable<ReturnType<RedisClient["pipeline"]>>) =>
    Promise.all([...new Set(pipelines)].map((p) => p.exec().catch(() => undefined)));
  const update = (added: Owner[], removed: Owner[]) => {
    if ((!added.length && !removed.length) || redis.status !== "ready") return;
    const until = Date.now() + PRESENCE_MS;
    const batchOf = batches();
    const used = [
      ...added.map((owner) => batchOf().zadd(keyOf(owner), until, origin).pexpire(keyOf(owner), PRESENCE_MS)),
      ...removed.map((owner) => batchOf().zrem(keyOf(owner), origin)),
    ];
    onCommand(added.length * 2 + removed.length);
    void send(used);
  };
  const renewAll = () => update(owners(), []);
  const renew = setInterval(renewAll, PRESENCE_MS / 3);
  renew.unref();
  redis.on("ready", renewAll);
  return {
    update,
    async anywhere(owner) {
      return (await redis.zcount(keyOf(owner), `(${Date.now()}`, "+inf")) > 0;
    },
    async close(gone) {
      clearInterval(renew);
      redis.off("ready", renewAll);
      if (redis.status !== "ready" || !gone.length) return;
      const batchOf = batches();
      await send(gone.map((owner) => batchOf().zrem(keyOf(owner), origin)));
    },
  };
}
