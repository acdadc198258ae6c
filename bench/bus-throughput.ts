/**
 * Redis bus throughput for bench/multiprocess.ts: frames one `redisBus` publishes until another
 * (its own connections, as another process would have) received them all, typing frames and
 * 4,000-character message.updates.
 * @module
 */
import { Redis } from "ioredis";
import { redisBus } from "chat-gateway/bus/redis";

export interface Throughput {
  frame: string;
  frames: number;
  perSecond: number;
  mbPerSecond: number;
}

/** Frames published on one redisBus until another (own connections, as another process) received them all. */
export async function busThroughput(redisUrl: string, prefix: string, quick: boolean): Promise<Throughput[]> {
  const a = new Redis(redisUrl);
  const b = new Redis(redisUrl);
  const busA = redisBus(a, { prefix });
  const busB = redisBus(b, { prefix });
  await Promise.all([busA.ready(), busB.ready()]);
  const out: Throughput[] = [];
  try {
    for (const [frame, chars, count] of [
      ["typing (~100 B)", 0, quick ? 5_000 : 20_000],
      ["message.update with 4,000 characters (~4.1 KB)", 4000, quick ? 1_000 : 5_000],
    ] as const) {
      let got = 0;
      let done: (() => void) | undefined;
      const all = new Promise<void>((r) => (done = r));
      const off = busB.subscribe("bench", () => {
        if (++got === count) done?.();
      });
      // Frames published before Redis acknowledged the subscription would never arrive.
      await busB.ready();
      const payload = chars
        ? { message_id: "m_bench", text: "x".repeat(chars), chat_id: "default", thread_id: null }
        : { on: true, chat_id: "default", thread_id: null };
      const bytes = JSON.stringify(payload).length + 60;
      const t0 = performance.now();
      for (let i = 0; i < count; i++) {
        busA.publish({ owner: "bench", frame: { type: chars ? "message.update" : "typing", payload } });
        // Yield now and then so the publisher's socket drains as a gateway's would between events.
        if (i % 500 === 499) await new Promise((r) => setImmediate(r));
      }
      await all;
      const seconds = (performance.now() - t0) / 1000;
      off();
      out.push({ frame, frames: count, perSecond: count / seconds, mbPerSecond: (count * bytes) / seconds / 1e6 });
    }
  } finally {
    await busA.close?.();
    await busB.close?.();
    a.disconnect();
    b.disconnect();
  }
  return out;
}
