/**
 * The `fencing` capability of the sql.js storage (docs/PROTOCOL.md §4.2): one token row per owner
 * and lane, raised by a commit that takes the lane and checked by every commit that carries it;
 * and the `requireStreaming` check that keeps an answer to one final. The database process
 * applies one op at a time, so nothing commits between these checks and the writes after them.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { Change, CommitResult, Lane } from "chat-gateway/storage";
import type { Sql } from "./sql.js";

/** Migration 9: the lane tokens. */
export const FENCES_MIGRATION = `
  CREATE TABLE lane_fences (
    owner TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    thread_key TEXT NOT NULL,
    fence INTEGER NOT NULL,
    PRIMARY KEY (owner, chat_id, thread_key)
  ) WITHOUT ROWID;
`;

function laneFence(sql: Sql, owner: Owner, lane: Lane): number {
  const row = sql.get("SELECT fence FROM lane_fences WHERE owner = ? AND chat_id = ? AND thread_key = ?", [
    owner,
    lane.chat_id,
    lane.thread_id ?? "",
  ]);
  return row ? (row[0] as number) : 0;
}

/** Why the change must apply nothing (its lane token moved on, or an answer it ends is not streaming), if so. */
export function fenceRefusal(sql: Sql, owner: Owner, c: Change): CommitResult | undefined {
  if (c.fence && laneFence(sql, owner, c.fence) !== c.fence.token)
    return { seqs: [], orphanedMedia: [], skipped: true, fenced: true };
  for (const id of c.requireStreaming ?? []) {
    const row = sql.get("SELECT status FROM messages WHERE owner = ? AND message_id = ?", [owner, id]);
    if (row?.[0] !== "streaming") return { seqs: [], orphanedMedia: [], skipped: true };
  }
  return undefined;
}

/** Raise the lane's token by one (`Change.takeLane`); the new token. */
export function takeLane(sql: Sql, owner: Owner, lane: Lane): number {
  const fence = laneFence(sql, owner, lane) + 1;
  sql.run("INSERT OR REPLACE INTO lane_fences (owner, chat_id, thread_key, fence) VALUES (?, ?, ?, ?)", [
    owner,
    lane.chat_id,
    lane.thread_id ?? "",
    fence,
  ]);
  return fence;
}
