/**
 * The `fencing` capability of the PostgreSQL storage (docs/PROTOCOL.md §4.2): one token row per
 * owner and lane, raised by a commit that takes the lane and checked by every commit that carries
 * it; and the `requireStreaming` check that keeps an answer to one final. Both run inside the
 * commit's transaction after the owner's lock (`lockOwner`), which every commit of the owner in
 * every process takes first: nothing commits between these checks and the writes after them.
 * @module
 */
import type { PoolClient } from "pg";
import type { MessageId, Owner } from "chat-gateway";
import type { Lane, LaneFence } from "chat-gateway/storage";

/** Migration 13: the lane tokens. */
export const FENCES_MIGRATION = (s: string): string => `
    CREATE TABLE ${s}.lane_fences (
      owner text NOT NULL,
      chat_id text NOT NULL,
      thread_key text NOT NULL,
      fence bigint NOT NULL,
      PRIMARY KEY (owner, chat_id, thread_key)
    );`;

/** True when the lane's token is still the one the writer holds (a lane never taken has 0). */
export async function fenceHolds(client: PoolClient, s: string, owner: Owner, fence: LaneFence): Promise<boolean> {
  const { rows } = await client.query<{ fence: string }>(
    `SELECT fence FROM ${s}.lane_fences WHERE owner = $1 AND chat_id = $2 AND thread_key = $3`,
    [owner, fence.chat_id, fence.thread_id ?? ""],
  );
  return Number(rows[0]?.fence ?? 0) === fence.token;
}

/** True when every one of the messages is stored `streaming`. */
export async function stillStreaming(client: PoolClient, s: string, owner: Owner, ids: MessageId[]): Promise<boolean> {
  const wanted = [...new Set(ids)];
  if (!wanted.length) return true;
  const { rows } = await client.query(
    `SELECT 1 FROM ${s}.messages WHERE owner = $1 AND message_id = ANY($2::text[]) AND status = 'streaming' FOR UPDATE`,
    [owner, wanted],
  );
  return rows.length === wanted.length;
}

/** Raise the lane's token by one in one statement; the new token. */
export async function takeLane(client: PoolClient, s: string, owner: Owner, lane: Lane): Promise<number> {
  const { rows } = await client.query<{ fence: string }>(
    `INSERT INTO ${s}.lane_fences (owner, chat_id, thread_key, fence) VALUES ($1, $2, $3, 1)
     ON CONFLICT (owner, chat_id, thread_key) DO UPDATE SET fence = ${s}.lane_fences.fence + 1 RETURNING fence`,
    [owner, lane.chat_id, lane.thread_id ?? ""],
  );
  return Number(rows[0].fence);
}
