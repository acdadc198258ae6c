/**
 * The {@link HookStore} of the sql.js storage (docs/PROTOCOL.md §17): its journaled writes and
 * its reads. The secret is kept as given in the database file (mode 0600): the gateway computes
 * each post's HMAC with it, so it cannot be hashed.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { HookClaim, HookRecord, HookStore, OwnedHook } from "chat-gateway/storage";
import type { Sql } from "./sql.js";

/** The journaled hook writes; each clock value they depend on is in the op. */
export type HookOp =
  | { k: "hook"; o: Owner; h: HookRecord }
  | { k: "unhook"; o: Owner; id: string }
  | { k: "claim"; id: string; key: string; e: number; t: number }
  | { k: "settle"; id: string; key: string; m: string | null };

/** Migration 5: hooks by id, and the delivery keys each hook holds. */
export const HOOKS_MIGRATION = `
  CREATE TABLE hooks (
    hook_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (owner, name)
  ) WITHOUT ROWID;
  CREATE TABLE hook_keys (
    hook_id TEXT NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    message_id TEXT,
    PRIMARY KEY (hook_id, key)
  ) WITHOUT ROWID;
`;

function forget(sql: Sql, hookId: string): void {
  sql.run("DELETE FROM hook_keys WHERE hook_id = ?", [hookId]);
  sql.run("DELETE FROM hooks WHERE hook_id = ?", [hookId]);
}

function claim(sql: Sql, hookId: string, key: string, expiresAt: number, now: number): HookClaim {
  sql.run("DELETE FROM hook_keys WHERE hook_id = ? AND expires_at <= ?", [hookId, now]);
  const held = sql.get("SELECT message_id FROM hook_keys WHERE hook_id = ? AND key = ?", [hookId, key]);
  if (held) return typeof held[0] === "string" ? { claimed: false, message_id: held[0] } : { claimed: false };
  sql.run("INSERT INTO hook_keys (hook_id, key, expires_at) VALUES (?, ?, ?)", [hookId, key, expiresAt]);
  return { claimed: true };
}

/** Applies one hook op; the caller holds the transaction. */
export function applyHookOp(sql: Sql, op: HookOp): HookClaim | boolean | undefined {
  switch (op.k) {
    case "hook":
      for (const [id] of sql.all("SELECT hook_id FROM hooks WHERE owner = ? AND name = ? AND hook_id <> ?", [
        op.o,
        op.h.name,
        op.h.hook_id,
      ]))
        forget(sql, id as string);
      sql.run("INSERT OR REPLACE INTO hooks (hook_id, owner, name, data) VALUES (?, ?, ?, ?)", [
        op.h.hook_id,
        op.o,
        op.h.name,
        JSON.stringify(op.h),
      ]);
      return undefined;
    case "unhook": {
      const found = sql.get("SELECT 1 FROM hooks WHERE hook_id = ? AND owner = ?", [op.id, op.o]);
      if (found) forget(sql, op.id);
      return found !== undefined;
    }
    case "claim":
      return claim(sql, op.id, op.key, op.e, op.t);
    case "settle":
      if (op.m === null) sql.run("DELETE FROM hook_keys WHERE hook_id = ? AND key = ?", [op.id, op.key]);
      else sql.run("UPDATE hook_keys SET message_id = ? WHERE hook_id = ? AND key = ?", [op.m, op.id, op.key]);
      return undefined;
  }
}

/** The hook reads, by name (part of the storage's reads). */
export const hookQueries = {
  getHook(sql: Sql, hookId: string): OwnedHook | undefined {
    const row = sql.get("SELECT owner, data FROM hooks WHERE hook_id = ?", [hookId]);
    return row && { owner: row[0] as Owner, hook: JSON.parse(row[1] as string) as HookRecord };
  },
  listHooks(sql: Sql, owner: Owner): HookRecord[] {
    return sql
      .all("SELECT data FROM hooks WHERE owner = ?", [owner])
      .map((r) => JSON.parse(r[0] as string) as HookRecord);
  },
};

/** The hook store as the storage offers it, over the storage's read and journaled write. */
export function sqlJsHooks(
  read: (name: keyof typeof hookQueries, ...args: unknown[]) => Promise<unknown>,
  write: (op: HookOp) => Promise<unknown>,
): HookStore {
  return {
    getHook: (hookId) => read("getHook", hookId) as Promise<OwnedHook | undefined>,
    listHooks: (owner) => read("listHooks", owner) as Promise<HookRecord[]>,
    async putHook(owner, hook) {
      await write({ k: "hook", o: owner, h: hook });
    },
    deleteHook: (owner, hookId) => write({ k: "unhook", o: owner, id: hookId }) as Promise<boolean>,
    claimHookKey: (hookId, key, expiresAt, now) =>
      write({ k: "claim", id: hookId, key, e: expiresAt, t: now }) as Promise<HookClaim>,
    async settleHookKey(hookId, key, messageId) {
      await write({ k: "settle", id: hookId, key, m: messageId });
    },
  };
}
