/**
 * The `actionTokens` capability of the PostgreSQL storage (docs/PROTOCOL.md §21): token hashes in
 * one table, each settled by one conditional UPDATE, atomic across every process sharing the
 * database.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { ActionTokenRecord, ActionTokenStore } from "chat-gateway/storage";
import type { Database } from "./database.js";

interface Row {
  hash: string;
  owner: string;
  picker_id: string;
  option_id: string;
  device_id: string;
  target: string;
  expires_at: string;
  outcome: string | null;
}

function recordOf(row: Row): ActionTokenRecord {
  const { outcome, expires_at, ...rest } = row;
  const record: ActionTokenRecord = { ...rest, owner: rest.owner as Owner, expires_at: Number(expires_at) };
  if (outcome !== null) record.outcome = outcome;
  return record;
}

const COLUMNS = "hash, owner, picker_id, option_id, device_id, target, expires_at, outcome";

/** The capability on the `action_tokens` table. */
export function postgresActionTokens(db: Database): ActionTokenStore {
  const { s, rows } = db;
  return {
    async putActionTokens(records) {
      for (const r of records)
        await rows(
          `INSERT INTO ${s}.action_tokens (hash, owner, picker_id, option_id, device_id, target, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (hash) DO NOTHING`,
          [r.hash, r.owner, r.picker_id, r.option_id, r.device_id, r.target, r.expires_at],
        );
    },
    async getActionToken(hash) {
      const [row] = await rows<Row>(`SELECT ${COLUMNS} FROM ${s}.action_tokens WHERE hash = $1`, [hash]);
      return row && recordOf(row);
    },
    async settleActionToken(hash, outcome) {
      // The UPDATE's row lock orders concurrent settles: the first sets it, the rest find it set.
      await rows(`UPDATE ${s}.action_tokens SET outcome = $2 WHERE hash = $1 AND outcome IS NULL`, [hash, outcome]);
      const [row] = await rows<{ outcome: string }>(`SELECT outcome FROM ${s}.action_tokens WHERE hash = $1`, [hash]);
      return row?.outcome;
    },
    async actionTokensOf(owner, pickerId) {
      return (
        await rows<Row>(`SELECT ${COLUMNS} FROM ${s}.action_tokens WHERE owner = $1 AND picker_id = $2`, [
          owner,
          pickerId,
        ])
      ).map(recordOf);
    },
    async deleteExpiredActionTokens(now) {
      return (await rows(`DELETE FROM ${s}.action_tokens WHERE expires_at <= $1 RETURNING hash`, [now])).length;
    },
  };
}
