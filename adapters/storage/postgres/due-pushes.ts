/**
 * The `duePushes` capability of the PostgreSQL storage (docs/PROTOCOL.md §21.6): waiting pushes in
 * one table, taken by `DELETE … RETURNING`, so each row goes to exactly one of the processes
 * sharing the database.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { DuePushRecord, DuePushStore } from "chat-gateway/storage";
import type { Database } from "./database.js";

interface Row {
  owner: string;
  key: string;
  payload: string;
  due_at: string;
}

function recordOf(row: Row): DuePushRecord {
  return { owner: row.owner as Owner, key: row.key, payload: row.payload, due_at: Number(row.due_at) };
}

/** The capability on the `due_pushes` table. */
export function postgresDuePushes(db: Database): DuePushStore {
  const { s, rows } = db;
  return {
    async addDuePush(r) {
      await rows(
        `INSERT INTO ${s}.due_pushes (owner, key, payload, due_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (owner, key) DO NOTHING`,
        [r.owner, r.key, r.payload, r.due_at],
      );
    },
    async claimDuePushes(now, limit) {
      // SKIP LOCKED: concurrent claims take different rows instead of queueing on the same ones;
      // the DELETE removes what this one locked, so no row is returned twice.
      const taken = await rows<Row>(
        `DELETE FROM ${s}.due_pushes WHERE (owner, key) IN (
           SELECT owner, key FROM ${s}.due_pushes WHERE due_at <= $1
           ORDER BY due_at, owner, key LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING owner, key, payload, due_at`,
        [now, Math.max(1, limit)],
      );
      return taken.map(recordOf).sort((a, b) => a.due_at - b.due_at);
    },
    async dropDuePush(owner, key) {
      const gone = await rows(`DELETE FROM ${s}.due_pushes WHERE owner = $1 AND key = $2 RETURNING key`, [owner, key]);
      return gone.length > 0;
    },
  };
}
