/**
 * The `duePushes` capability of the sql.js storage (docs/PROTOCOL.md §21.6): journaled writes of
 * one table of waiting pushes. The engine applies one op at a time and one process holds the data
 * folder, so a claim is atomic; the clock and the limit are in the op, so a replay takes the same
 * rows.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { DuePushRecord, DuePushStore } from "chat-gateway/storage";
import type { Sql } from "./sql.js";

/** The journaled writes of waiting pushes. */
export type DuePushOp =
  | { k: "dpadd"; r: DuePushRecord }
  | { k: "dpclaim"; t: number; n: number }
  | { k: "dpdrop"; o: Owner; key: string };

/** Migration 11: waiting pushes by owner and key, and by due time for claims. */
export const DUE_PUSHES_MIGRATION = `
  CREATE TABLE due_pushes (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    payload TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    PRIMARY KEY (owner, key)
  ) WITHOUT ROWID;
  CREATE INDEX due_pushes_by_time ON due_pushes (due_at);
`;

/** Applies one op; the caller holds the transaction. */
export function applyDuePushOp(sql: Sql, op: DuePushOp): DuePushRecord[] | boolean | undefined {
  switch (op.k) {
    case "dpadd":
      sql.run("INSERT OR IGNORE INTO due_pushes (owner, key, payload, due_at) VALUES (?, ?, ?, ?)", [
        op.r.owner,
        op.r.key,
        op.r.payload,
        op.r.due_at,
      ]);
      return undefined;
    case "dpclaim": {
      const taken = sql
        .all(
          "SELECT owner, key, payload, due_at FROM due_pushes WHERE due_at <= ? ORDER BY due_at, owner, key LIMIT ?",
          [op.t, Math.max(1, op.n)],
        )
        .map(([owner, key, payload, due_at]) => ({
          owner: owner as Owner,
          key: key as string,
          payload: payload as string,
          due_at: Number(due_at),
        }));
      for (const r of taken) sql.run("DELETE FROM due_pushes WHERE owner = ? AND key = ?", [r.owner, r.key]);
      return taken;
    }
    case "dpdrop": {
      const found = sql.get("SELECT 1 FROM due_pushes WHERE owner = ? AND key = ?", [op.o, op.key]) !== undefined;
      if (found) sql.run("DELETE FROM due_pushes WHERE owner = ? AND key = ?", [op.o, op.key]);
      return found;
    }
  }
}

/** The capability as the storage offers it, over the storage's journaled write. */
export function sqlJsDuePushes(write: (op: DuePushOp) => Promise<unknown>): DuePushStore {
  return {
    async addDuePush(record) {
      await write({ k: "dpadd", r: { ...record } });
    },
    claimDuePushes: (now, limit) => write({ k: "dpclaim", t: now, n: limit }) as Promise<DuePushRecord[]>,
    dropDuePush: (owner, key) => write({ k: "dpdrop", o: owner, key }) as Promise<boolean>,
  };
}
