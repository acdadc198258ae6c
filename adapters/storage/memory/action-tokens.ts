/**
 * The `actionTokens` capability of the memory storage (docs/PROTOCOL.md §21): one map by hash.
 * One process, no awaits inside a call: each call is atomic.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { ActionTokenRecord, ActionTokenStore } from "chat-gateway/storage";

/** A fresh, empty token store. */
export function memoryActionTokens(): ActionTokenStore {
  const byHash = new Map<string, ActionTokenRecord>();
  return {
    async putActionTokens(records) {
      for (const record of records) if (!byHash.has(record.hash)) byHash.set(record.hash, structuredClone(record));
    },
    async getActionToken(hash) {
      const found = byHash.get(hash);
      return found && structuredClone(found);
    },
    async settleActionToken(hash, outcome) {
      const found = byHash.get(hash);
      if (!found) return undefined;
      found.outcome ??= outcome;
      return found.outcome;
    },
    async actionTokensOf(owner: Owner, pickerId: string) {
      return [...byHash.values()]
        .filter((t) => t.owner === owner && t.picker_id === pickerId)
        .map((t) => structuredClone(t));
    },
    async deleteExpiredActionTokens(now) {
      let deleted = 0;
      for (const [hash, record] of byHash) {
        if (record.expires_at <= now) {
          byHash.delete(hash);
          deleted++;
        }
      }
      return deleted;
    },
  };
}
