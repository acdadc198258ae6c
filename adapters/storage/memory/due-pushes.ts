/**
 * The `duePushes` capability of the memory storage (docs/PROTOCOL.md §21.6): one map by owner and
 * key. One process, no awaits inside a call: each call is atomic.
 * @module
 */
import type { DuePushRecord, DuePushStore } from "chat-gateway/storage";

/** A fresh, empty store of waiting pushes. */
export function memoryDuePushes(): DuePushStore {
  const byKey = new Map<string, DuePushRecord>();
  const keyOf = (owner: string, key: string) => JSON.stringify([owner, key]);
  return {
    async addDuePush(record) {
      const k = keyOf(record.owner, record.key);
      if (!byKey.has(k)) byKey.set(k, { ...record });
    },
    async claimDuePushes(now, limit) {
      const due = [...byKey.values()]
        .filter((r) => r.due_at <= now)
        .sort((a, b) => a.due_at - b.due_at || keyOf(a.owner, a.key).localeCompare(keyOf(b.owner, b.key)))
        .slice(0, Math.max(1, limit));
      for (const r of due) byKey.delete(keyOf(r.owner, r.key));
      return due;
    },
    async dropDuePush(owner, key) {
      return byKey.delete(keyOf(owner, key));
    },
  };
}
