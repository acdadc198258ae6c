/**
 * The `actionTokens` capability of the sql.js storage (docs/PROTOCOL.md §21): journaled writes
 * and reads of one table of token hashes. The engine applies one op at a time, so a settle is
 * atomic.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { ActionTokenRecord, ActionTokenStore } from "chat-gateway/storage";
import type { Sql } from "./sql.js";

/** The journaled token writes; the clock a purge depends on is in the op. */
export type ActionTokenOp =
  | { k: "atok"; r: ActionTokenRecord[] }
  | { k: "atset"; h: string; out: string }
  | { k: "atgc"; t: number };

/** Migration 10: action tokens by hash, and by ask for retraction. */
export const ACTION_TOKENS_MIGRATION = `
  CREATE TABLE action_tokens (
    hash TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    picker_id TEXT NOT NULL,
    option_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    target TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    outcome TEXT
  ) WITHOUT ROWID;
  CREATE INDEX action_tokens_by_ask ON action_tokens (owner, picker_id);
`;

const COLUMNS = "hash, owner, picker_id, option_id, device_id, target, expires_at, outcome";

function recordOf(row: unknown[]): ActionTokenRecord {
  const [hash, owner, picker_id, option_id, device_id, target, expires_at, outcome] = row;
  const record: ActionTokenRecord = {
    hash: hash as string,
    owner: owner as Owner,
    picker_id: picker_id as string,
    option_id: option_id as string,
    device_id: device_id as string,
    target: target as string,
    expires_at: Number(expires_at),
  };
  if (typeof outcome === "string") record.outcome = outcome;
  return record;
}

/** Applies one token op; the caller holds the transaction. */
export function applyActionTokenOp(sql: Sql, op: ActionTokenOp): string | number | undefined {
  switch (op.k) {
    case "atok":
      for (const r of op.r)
        sql.run(
          "INSERT OR IGNORE INTO action_tokens (hash, owner, picker_id, option_id, device_id, target, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
          [r.hash, r.owner, r.picker_id, r.option_id, r.device_id, r.target, r.expires_at],
        );
      return undefined;
    case "atset": {
      sql.run("UPDATE action_tokens SET outcome = ? WHERE hash = ? AND outcome IS NULL", [op.out, op.h]);
      const row = sql.get("SELECT outcome FROM action_tokens WHERE hash = ?", [op.h]);
      return row ? (row[0] as string) : undefined;
    }
    case "atgc": {
      const count = Number(sql.get("SELECT count(*) FROM action_tokens WHERE expires_at <= ?", [op.t])![0]);
      sql.run("DELETE FROM action_tokens WHERE expires_at <= ?", [op.t]);
      return count;
    }
  }
}

/** The token reads, by name (part of the storage's reads). */
export const actionTokenQueries = {
  getActionToken(sql: Sql, hash: string): ActionTokenRecord | undefined {
    const row = sql.get(`SELECT ${COLUMNS} FROM action_tokens WHERE hash = ?`, [hash]);
    return row && recordOf(row);
  },
  actionTokensOf(sql: Sql, owner: Owner, pickerId: string): ActionTokenRecord[] {
    return sql
      .all(`SELECT ${COLUMNS} FROM action_tokens WHERE owner = ? AND picker_id = ?`, [owner, pickerId])
      .map(recordOf);
  },
};

/** The capability as the storage offers it, over the storage's read and journaled write. */
export function sqlJsActionTokens(
  read: (name: keyof typeof actionTokenQueries, ...args: unknown[]) => Promise<unknown>,
  write: (op: ActionTokenOp) => Promise<unknown>,
): ActionTokenStore {
  return {
    async putActionTokens(records) {
      if (records.length > 0) await write({ k: "atok", r: records.map((r) => ({ ...r })) });
    },
    getActionToken: (hash) => read("getActionToken", hash) as Promise<ActionTokenRecord | undefined>,
    settleActionToken: (hash, outcome) => write({ k: "atset", h: hash, out: outcome }) as Promise<string | undefined>,
    actionTokensOf: (owner, pickerId) => read("actionTokensOf", owner, pickerId) as Promise<ActionTokenRecord[]>,
    deleteExpiredActionTokens: (now) => write({ k: "atgc", t: now }) as Promise<number>,
  };
}
