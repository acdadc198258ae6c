/**
 * The {@link HookStore} of the PostgreSQL storage (docs/PROTOCOL.md §17): hooks by id, and their
 * delivery keys, claimed atomically across every process sharing the database.
 * @module
 */
import type { HookClaim, HookRecord, HookStore, OwnedHook } from "chat-gateway/storage";
import type { Database } from "./database.js";

/** The hook store on the `hooks` and `hook_keys` tables (migration 8). */
export function postgresHooks(db: Database): HookStore {
  const { s, rows } = db;
  return {
    async putHook(owner, hook) {
      await db.transaction(async (client) => {
        // A new hook of a name replaces the old one: its id and keys go with it.
        await client.query(`DELETE FROM ${s}.hooks WHERE owner = $1 AND name = $2 AND hook_id <> $3`, [
          owner,
          hook.name,
          hook.hook_id,
        ]);
        await client.query(
          `INSERT INTO ${s}.hooks (hook_id, owner, name, data) VALUES ($1, $2, $3, $4) ON CONFLICT (hook_id) DO UPDATE SET owner = EXCLUDED.owner, name = EXCLUDED.name, data = EXCLUDED.data`,
          [hook.hook_id, owner, hook.name, JSON.stringify(hook)],
        );
      });
    },
    async getHook(hookId): Promise<OwnedHook | undefined> {
      const [row] = await rows<{ owner: string; data: string }>(
        `SELECT owner, data FROM ${s}.hooks WHERE hook_id = $1`,
        [hookId],
      );
      return row && { owner: row.owner, hook: JSON.parse(row.data) as HookRecord };
    },
    async listHooks(owner) {
      return (await rows<{ data: string }>(`SELECT data FROM ${s}.hooks WHERE owner = $1`, [owner])).map(
        (r) => JSON.parse(r.data) as HookRecord,
      );
    },
    async deleteHook(owner, hookId) {
      return (
        (await rows(`DELETE FROM ${s}.hooks WHERE owner = $1 AND hook_id = $2 RETURNING hook_id`, [owner, hookId]))
          .length > 0
      );
    },
    async claimHookKey(hookId, key, expiresAt, now): Promise<HookClaim> {
      // One statement: a fresh key is inserted, an expired one taken over, a live one left alone
      // (then no row comes back and the holder is read).
      const taken = await rows(
        `INSERT INTO ${s}.hook_keys (hook_id, key, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (hook_id, key) DO UPDATE SET expires_at = EXCLUDED.expires_at, message_id = NULL WHERE ${s}.hook_keys.expires_at <= $4
         RETURNING key`,
        [hookId, key, expiresAt, now],
      );
      if (taken.length > 0) {
        await rows(`DELETE FROM ${s}.hook_keys WHERE hook_id = $1 AND expires_at <= $2`, [hookId, now]);
        return { claimed: true };
      }
      const [held] = await rows<{ message_id: string | null }>(
        `SELECT message_id FROM ${s}.hook_keys WHERE hook_id = $1 AND key = $2`,
        [hookId, key],
      );
      return held?.message_id ? { claimed: false, message_id: held.message_id } : { claimed: false };
    },
    async settleHookKey(hookId, key, messageId) {
      if (messageId === null) await rows(`DELETE FROM ${s}.hook_keys WHERE hook_id = $1 AND key = $2`, [hookId, key]);
      else
        await rows(`UPDATE ${s}.hook_keys SET message_id = $3 WHERE hook_id = $1 AND key = $2`, [
          hookId,
          key,
          messageId,
        ]);
    },
  };
}
