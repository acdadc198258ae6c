/**
 * How many posts a minute each hook may take (docs/PROTOCOL.md §17): counted in this process by
 * default, or across every process by a shared budget (`redisHookBudget` of `chat-gateway/redis`).
 * @module
 */

/**
 * Where the posts of each hook are counted. `take` counts one post of the hook at `now` (unix ms)
 * if the hook has room in its sliding minute, answering 0; otherwise it counts nothing and answers
 * the whole seconds until one fits. It must be atomic across every process sharing it.
 */
export interface HookPostBudget {
  take(hookId: string, now: number): Promise<number>;
}

/** A sliding minute of posts per hook in this process; forgets hooks that went quiet. */
export function memoryHookBudget(limit: number, windowMs = 60_000): HookPostBudget {
  const times = new Map<string, number[]>();
  return {
    async take(key, now) {
      const kept = (times.get(key) ?? []).filter((t) => t > now - windowMs);
      if (kept.length >= limit) {
        times.set(key, kept);
        return Math.max(1, Math.ceil((kept[0]! + windowMs - now) / 1000));
      }
      kept.push(now);
      times.set(key, kept);
      if (times.size > 10_000) for (const [k, v] of times) if (v.every((t) => t <= now - windowMs)) times.delete(k);
      return 0;
    },
  };
}
