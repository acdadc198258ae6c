/**
 * Churn part of bench/routing.ts: one bus, `owners` owners whose only device connects and
 * disconnects, all in one event-loop turn (a reconnect storm) and one per turn: time until Redis
 * acknowledged, and the commands the bus sent (SUBSCRIBE / UNSUBSCRIBE and presence).
 * @module
 */
import { Redis } from "ioredis";
import { redisBus } from "chat-gateway/bus/redis";

export interface ChurnResult {
  pattern: string;
  connectMs: number;
  connectCommands: number;
  disconnectMs: number;
  disconnectCommands: number;
}

/** Devices of `owners` distinct owners connect to one process and leave: in one turn, then one per turn. */
export async function subscriptionChurn(redisUrl: string, prefix: string, owners: number): Promise<ChurnResult[]> {
  const redis = new Redis(redisUrl);
  const bus = redisBus(redis, { prefix, warn: () => undefined });
  await bus.ready();
  const out: ChurnResult[] = [];
  const names = Array.from({ length: owners }, (_, i) => `churn-${i}`);
  try {
    for (const oneTurn of [true, false]) {
      let c0 = bus.stats.commands;
      let t0 = performance.now();
      const offs: Array<() => void> = [];
      for (const owner of names) {
        offs.push(bus.subscribe(owner, () => undefined));
        if (!oneTurn) await bus.ready(owner);
      }
      await bus.ready();
      const connectMs = performance.now() - t0;
      const connectCommands = bus.stats.commands - c0;
      c0 = bus.stats.commands;
      t0 = performance.now();
      for (const off of offs) {
        off();
        if (!oneTurn) await new Promise((r) => setImmediate(r));
      }
      await bus.ready();
      const disconnectMs = performance.now() - t0;
      const disconnectCommands = bus.stats.commands - c0;
      out.push({
        pattern: oneTurn ? `${owners} devices in one event-loop turn` : `${owners} devices one per turn`,
        connectMs,
        connectCommands,
        disconnectMs,
        disconnectCommands,
      });
    }
  } finally {
    await bus.close?.();
    redis.disconnect();
  }
  return out;
}
