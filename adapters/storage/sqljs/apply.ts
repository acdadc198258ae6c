import type { Channel, Device, MediaId, MediaRecord, MessageId, Owner, Seq, StoredMessage } from "chat-gateway";
import type {
  AdoptedCounts,
  AdoptionRefused,
  Change,
  ChannelExpectation,
  CommitResult,
  DuePushRecord,
  HookClaim,
  OwnedSchedule,
  RetentionPolicy,
} from "chat-gateway/storage";
import { expectedChannelsHeld } from "chat-gateway/storage";
import { adopt } from "./adopt.js";
import { applyHookOp, type HookOp } from "./hooks.js";
import { applyScheduleOp, type ScheduleOp } from "./schedules.js";
import { applyActionTokenOp, type ActionTokenOp } from "./action-tokens.js";
import { applyDuePushOp, type DuePushOp } from "./due-pushes.js";
import { indexMessage, unindexMessage } from "./fts-shards.js";
import { legacyRedactKey } from "./legacy-keys.js";
import { fenceRefusal, takeLane } from "./fences.js";
import { forgetReadMarks, movesForward, storeReadMark } from "./read-marks.js";
import { laneColumn } from "./search.js";
import { lastSeq } from "./seq.js";
import type { Sql } from "./sql.js";

/**
 * One journaled write. Live writes and journal replay both go through {@link applyOp}, so replaying
 * the journal on top of a snapshot rebuilds exactly the state that was acknowledged. Everything an
 * op depends on that is not in the database (the clock) is recorded in it.
 */
export type JournalOp =
  | { k: "commit"; o: Owner; c: Change; t: number }
  | { k: "device"; o: Owner; d: Device }
  | { k: "media"; o: Owner; m: MediaRecord }
  | { k: "unmedia"; o: Owner; ids: MediaId[] }
  | { k: "prune"; o: Owner; p: RetentionPolicy; t: number }
  | { k: "adopt"; o: Owner; to: Owner }
  | HookOp
  | ScheduleOp
  | ActionTokenOp
  | DuePushOp;

/** The message without its text, which has a column of its own (the FTS content). */
function messageData(m: StoredMessage): string {
  return JSON.stringify({ ...m, text: undefined });
}

function upsertMessage(sql: Sql, owner: Owner, m: StoredMessage): void {
  const threadKey = m.thread_id ?? "";
  const lane = laneColumn(owner, m.chat_id, m.thread_id);
  const cols = [
    m.chat_id,
    threadKey,
    m.ts,
    m.role,
    m.status ?? (m.waiting ? "waiting" : null),
    m.client_msg_id ?? null,
    m.text,
    lane,
    messageData(m),
  ];
  const old = sql.get("SELECT id FROM messages WHERE owner = ? AND message_id = ?", [owner, m.message_id]);
  let id: number;
  if (old) {
    id = old[0] as number;
    unindexMessage(sql, id);
    sql.run(
      "UPDATE messages SET chat_id = ?, thread_key = ?, ts = ?, role = ?, status = ?, client_msg_id = ?, text = ?, lane = ?, data = ? WHERE id = ?",
      [...cols, id],
    );
  } else {
    sql.run(
      "INSERT INTO messages (owner, message_id, chat_id, thread_key, ts, role, status, client_msg_id, text, lane, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      [owner, m.message_id, ...cols],
    );
    id = sql.get("SELECT last_insert_rowid()")![0] as number;
  }
  indexMessage(sql, id, m.text, lane);
  attachMedia(sql, owner, m);
}

function mediaRecord(sql: Sql, owner: Owner, mediaId: MediaId): MediaRecord | undefined {
  const row = sql.get("SELECT data FROM media WHERE owner = ? AND media_id = ?", [owner, mediaId]);
  return row && (JSON.parse(row[0] as string) as MediaRecord);
}

/** Whether a message other than `messageId` holds the media (see `Change` in chat-gateway). */
function heldByAnother(record: MediaRecord | undefined, messageId: MessageId): boolean {
  return record?.message_id !== undefined && record.message_id !== messageId;
}

/** The first media the messages would take from another message; checked before anything is applied. */
function takenMedia(sql: Sql, owner: Owner, messages: StoredMessage[]): MediaId | undefined {
  const claimed = new Map<MediaId, MessageId>();
  for (const m of messages) {
    for (const ref of m.media) {
      const other = claimed.get(ref.media_id);
      if (
        (other !== undefined && other !== m.message_id) ||
        heldByAnother(mediaRecord(sql, owner, ref.media_id), m.message_id)
      )
        return ref.media_id;
      claimed.set(ref.media_id, m.message_id);
    }
  }
  return undefined;
}

/** Marks the message's media as held by it ({@link takenMedia} has checked that no other message does). */
function attachMedia(sql: Sql, owner: Owner, m: StoredMessage): void {
  for (const ref of m.media) {
    const record = mediaRecord(sql, owner, ref.media_id);
    if (record && record.message_id !== m.message_id) {
      sql.run("UPDATE media SET data = ? WHERE owner = ? AND media_id = ?", [
        JSON.stringify({ ...record, message_id: m.message_id }),
        owner,
        ref.media_id,
      ]);
    }
  }
}

/** Deletes message rows (id, data) with their index entries and the media metadata only they hold. */
function deleteRows(sql: Sql, owner: Owner, rows: unknown[][], orphaned: Set<MediaId>, redact: Set<string>): void {
  for (const [id, data] of rows) {
    unindexMessage(sql, id as number);
    sql.run("DELETE FROM messages WHERE id = ?", [id as number]);
    const m = JSON.parse(data as string) as StoredMessage;
    redact.add(`m:${m.message_id}`);
    for (const ref of m.media ?? []) {
      if (heldByAnother(mediaRecord(sql, owner, ref.media_id), m.message_id)) continue;
      orphaned.add(ref.media_id);
      sql.run("DELETE FROM media WHERE owner = ? AND media_id = ?", [owner, ref.media_id]);
    }
  }
}

/** The turns of these user messages ended: they leave the durable turn queue (never re-inserted). */
function clearWaiting(sql: Sql, owner: Owner, ids: readonly MessageId[]): void {
  for (const messageId of ids) {
    const row = sql.get("SELECT id, data FROM messages WHERE owner = ? AND message_id = ? AND status = 'waiting'", [
      owner,
      messageId,
    ]);
    if (!row) continue;
    const { waiting: _waiting, ...data } = JSON.parse(row[1] as string) as StoredMessage;
    sql.run("UPDATE messages SET status = NULL, data = ? WHERE id = ?", [JSON.stringify(data), row[0] as number]);
  }
}

/** A redacted frame keeps its row (and so its seq) but no content; readOutbox skips it. */
function redactOutbox(sql: Sql, owner: Owner, keys: Set<string>): void {
  for (const key of keys)
    sql.run("UPDATE outbox SET type = '', payload = '{}', redact_key = NULL WHERE owner = ? AND redact_key = ?", [
      owner,
      key,
    ]);
}

/** The database process applies one op at a time, so nothing commits between this check and the writes. */
function channelsAsExpected(sql: Sql, owner: Owner, expected: ChannelExpectation[]): boolean {
  const stored = expected.map((e) => {
    const row = sql.get("SELECT data FROM channels WHERE owner = ? AND chat_id = ?", [owner, e.chat_id]);
    return row && (JSON.parse(row[0] as string) as Channel);
  });
  return expectedChannelsHeld(expected, stored);
}

function commit(sql: Sql, owner: Owner, c: Change, ts: number): CommitResult {
  const refused = fenceRefusal(sql, owner, c);
  if (refused) return refused;
  for (const id of c.requireMessages ?? []) {
    if (!sql.get("SELECT 1 FROM messages WHERE owner = ? AND message_id = ?", [owner, id]))
      return { seqs: [], orphanedMedia: [], skipped: true };
  }
  for (const id of c.requireChannels ?? []) {
    if (!sql.get("SELECT 1 FROM channels WHERE owner = ? AND chat_id = ?", [owner, id]))
      return { seqs: [], orphanedMedia: [], skipped: true };
  }
  if (!channelsAsExpected(sql, owner, c.expectChannels ?? [])) return { seqs: [], orphanedMedia: [], skipped: true };
  if (c.read && !movesForward(sql, owner, c.read)) return { seqs: [], orphanedMedia: [], skipped: true };
  const mediaTaken = takenMedia(sql, owner, c.messages ?? []);
  if (mediaTaken !== undefined) return { seqs: [], orphanedMedia: [], mediaTaken };
  for (const ch of c.channels ?? []) {
    sql.run("INSERT OR REPLACE INTO channels (owner, chat_id, data) VALUES (?, ?, ?)", [
      owner,
      ch.chat_id,
      JSON.stringify(ch),
    ]);
  }
  for (const m of c.messages ?? []) upsertMessage(sql, owner, m);
  const orphaned = new Set<MediaId>();
  const redact = new Set<string>();
  for (const id of c.deleteMessages ?? []) {
    deleteRows(
      sql,
      owner,
      sql.all("SELECT id, data FROM messages WHERE owner = ? AND message_id = ?", [owner, id as MessageId]),
      orphaned,
      redact,
    );
  }
  clearWaiting(sql, owner, c.answered ?? []);
  for (const chatId of c.deleteChannels ?? []) {
    sql.run("DELETE FROM channels WHERE owner = ? AND chat_id = ?", [owner, chatId]);
    redact.add(`c:${chatId}`);
    forgetReadMarks(sql, owner, chatId);
    deleteRows(
      sql,
      owner,
      sql.all("SELECT id, data FROM messages WHERE owner = ? AND chat_id = ?", [owner, chatId]),
      orphaned,
      redact,
    );
    deleteRows(
      sql,
      owner,
      sql.all("SELECT id, data FROM messages WHERE owner = ? AND thread_key = ? AND thread_key <> ''", [owner, chatId]),
      orphaned,
      redact,
    );
  }
  redactOutbox(sql, owner, redact);
  if (c.read) storeReadMark(sql, owner, c.read);
  const seqs: Seq[] = [];
  if (c.outbox?.length) {
    let last = lastSeq(sql, owner);
    for (const frame of c.outbox) {
      sql.run("INSERT INTO outbox (owner, seq, ts, type, payload, redact_key) VALUES (?, ?, ?, ?, ?, ?)", [
        owner,
        ++last,
        ts,
        frame.type,
        JSON.stringify(frame.payload),
        // A journal record of an older version has no key: it is computed as that version did.
        frame.redactKey === undefined ? legacyRedactKey(frame.type, frame.payload) : frame.redactKey,
      ]);
      seqs.push(last);
    }
    sql.run("INSERT OR REPLACE INTO outbox_last (owner, last) VALUES (?, ?)", [owner, last]);
  }
  return { seqs, orphanedMedia: [...orphaned], ...(c.takeLane ? { fence: takeLane(sql, owner, c.takeLane) } : {}) };
}

/** Both cuts are indexed range deletes from the front, since kept seqs are always contiguous. */
function prune(sql: Sql, owner: Owner, policy: RetentionPolicy, now: number): void {
  const keepFrom = lastSeq(sql, owner) - Math.max(0, policy.maxFrames);
  sql.run("DELETE FROM outbox WHERE owner = ? AND seq <= ?", [owner, keepFrom]);
  const old = sql.get("SELECT seq FROM outbox WHERE owner = ? AND ts < ? ORDER BY ts DESC, seq DESC LIMIT 1", [
    owner,
    now - policy.maxAgeMs,
  ]);
  if (old) sql.run("DELETE FROM outbox WHERE owner = ? AND seq <= ?", [owner, old[0]]);
}

/** What an op answers: a commit's result, an adoption's counts, a hook key claim, a hook deletion's boolean. */
export type OpResult =
  | CommitResult
  | AdoptedCounts
  | AdoptionRefused
  | HookClaim
  | OwnedSchedule
  | DuePushRecord[]
  | boolean
  | string
  | number
  | undefined;

/** Applies one op; the caller holds the transaction. */
export function applyOp(sql: Sql, op: JournalOp): OpResult {
  switch (op.k) {
    case "commit":
      return commit(sql, op.o, op.c, op.t);
    case "device":
      sql.run("INSERT OR REPLACE INTO devices (owner, device_id, data) VALUES (?, ?, ?)", [
        op.o,
        op.d.device_id,
        JSON.stringify(op.d),
      ]);
      return undefined;
    case "media":
      sql.run("INSERT OR REPLACE INTO media (owner, media_id, data) VALUES (?, ?, ?)", [
        op.o,
        op.m.media_id,
        JSON.stringify(op.m),
      ]);
      return undefined;
    case "unmedia":
      for (const id of op.ids) sql.run("DELETE FROM media WHERE owner = ? AND media_id = ?", [op.o, id]);
      return undefined;
    case "prune":
      prune(sql, op.o, op.p, op.t);
      return undefined;
    case "adopt":
      return adopt(sql, op.o, op.to);
    case "hook":
    case "unhook":
    case "claim":
    case "settle":
      return applyHookOp(sql, op);
    case "sched":
    case "unsched":
    case "slot":
    case "run":
      return applyScheduleOp(sql, op);
    case "atok":
    case "atset":
    case "atgc":
      return applyActionTokenOp(sql, op);
    case "dpadd":
    case "dpclaim":
    case "dpdrop":
      return applyDuePushOp(sql, op);
    default:
      throw new Error(`unknown journal op ${(op as { k: unknown }).k}`);
  }
}
