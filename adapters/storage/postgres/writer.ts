/**
 * The commit path of the PostgreSQL storage: one writer per owner and process applies the owner's
 * changes in call order, each in a transaction that numbers its outbox frames.
 * @module
 */
import type { PoolClient } from "pg";
import type { Owner, Seq, StoredMessage } from "chat-gateway";
import type { Change, CommitResult } from "chat-gateway/storage";
import type { Database } from "./database.js";
import {
  attachMedia,
  channelsAsExpected,
  channelsPresent,
  dropMediaOf,
  lockOwner,
  messagesPresent,
  redactOutbox,
} from "./integrity.js";
import { fenceHolds, stillStreaming, takeLane } from "./fences.js";
import { forgetReadMarks, moveReadMark, readMarkMoves } from "./read-marks.js";
import { lastByKey, prepareMessage } from "./rows.js";

/** Applies one change inside the caller's transaction (`s`: the quoted schema). */
async function apply(
  client: PoolClient,
  s: string,
  now: () => number,
  owner: Owner,
  change: Change,
): Promise<CommitResult> {
  const channels = lastByKey(change.channels ?? [], (c) => c.chat_id).map(
    (c) => [c.chat_id, JSON.stringify(c)] as const,
  );
  const messages = lastByKey(change.messages ?? [], (m) => m.message_id).map(prepareMessage);
  const frames = (change.outbox ?? []).map((f) => [f.type, JSON.stringify(f.payload), f.redactKey ?? null] as const);
  const deleteMessages = change.deleteMessages ?? [];
  const deleteChannels = change.deleteChannels ?? [];
  const answered = change.answered ?? [];
  if (
    !channels.length &&
    !messages.length &&
    !frames.length &&
    !deleteMessages.length &&
    !deleteChannels.length &&
    !answered.length &&
    !change.read &&
    !change.takeLane &&
    !change.fence
  ) {
    return { seqs: [], orphanedMedia: [] };
  }
  if (change.fence && !(await fenceHolds(client, s, owner, change.fence)))
    return { seqs: [], orphanedMedia: [], skipped: true, fenced: true };
  if (!(await preconditionsHold(client, s, owner, change))) return { seqs: [], orphanedMedia: [], skipped: true };
  // First of the writes: a change that would take media from another message writes nothing.
  const mediaTaken = await attachMedia(client, s, owner, change.messages ?? []);
  if (mediaTaken !== undefined) return { seqs: [], orphanedMedia: [], mediaTaken };
  await writeRows(client, s, owner, channels, messages);
  const gone = await deleteRows(client, s, owner, deleteMessages, deleteChannels);
  if (answered.length) {
    // The turns of these user messages ended: they leave the durable turn queue (never re-inserted).
    await client.query(
      `UPDATE ${s}.messages SET status = NULL, data = (data::jsonb - 'waiting')::text WHERE owner = $1 AND message_id = ANY($2::text[]) AND status = 'waiting'`,
      [owner, answered],
    );
  }
  const orphaned = await dropMediaOf(client, s, owner, gone);
  await redactOutbox(client, s, owner, gone, deleteChannels);
  if (change.read) await moveReadMark(client, s, owner, change.read);
  const seqs = frames.length ? await appendOutbox(client, s, owner, frames, now) : [];
  if (!change.takeLane) return { seqs, orphanedMedia: orphaned };
  return { seqs, orphanedMedia: orphaned, fence: await takeLane(client, s, owner, change.takeLane) };
}

/** Whether the messages and channels the change requires are there, as expected, and its read mark may move. */
async function preconditionsHold(client: PoolClient, s: string, owner: Owner, change: Change): Promise<boolean> {
  if (!(await messagesPresent(client, s, owner, change.requireMessages ?? []))) return false;
  if (!(await stillStreaming(client, s, owner, change.requireStreaming ?? []))) return false;
  if (!(await channelsPresent(client, s, owner, change.requireChannels ?? []))) return false;
  if (!(await channelsAsExpected(client, s, owner, change.expectChannels ?? []))) return false;
  // The owner's lock keeps the watermark as checked until the commit, in every process.
  return !change.read || (await readMarkMoves(client, s, owner, change.read));
}

/** Upserts the channels, then the messages with their search rows. */
async function writeRows(
  client: PoolClient,
  s: string,
  owner: Owner,
  channels: ReadonlyArray<readonly [string, string]>,
  messages: unknown[][],
): Promise<void> {
  for (const [chatId, data] of channels) {
    await client.query(
      `INSERT INTO ${s}.channels (owner, chat_id, data) VALUES ($1, $2, $3) ON CONFLICT (owner, chat_id) DO UPDATE SET data = EXCLUDED.data`,
      [owner, chatId, data],
    );
  }
  for (const values of messages) {
    // One statement writes the message and its search row, so neither is ever there without the other.
    await client.query(
      `WITH written AS (
         INSERT INTO ${s}.messages (owner, message_id, chat_id, thread_key, role, status, ts, client_msg_id, text, data, lanes)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::tsvector)
         ON CONFLICT (owner, message_id) DO UPDATE SET chat_id = EXCLUDED.chat_id, thread_key = EXCLUDED.thread_key, role = EXCLUDED.role,
           status = EXCLUDED.status, ts = EXCLUDED.ts, client_msg_id = EXCLUDED.client_msg_id, text = EXCLUDED.text, data = EXCLUDED.data, lanes = EXCLUDED.lanes
         RETURNING owner, message_id, ts)
       INSERT INTO ${s}.message_search (owner, message_id, ts, words, folded) SELECT owner, message_id, ts, $12::tsvector, $13 FROM written
       ON CONFLICT (owner, message_id) DO UPDATE SET ts = EXCLUDED.ts, words = EXCLUDED.words, folded = EXCLUDED.folded`,
      [owner, ...values],
    );
  }
}

/** Deletes the named messages, then the channels with their read marks and messages; returns every message deleted. */
async function deleteRows(
  client: PoolClient,
  s: string,
  owner: Owner,
  deleteMessages: string[],
  deleteChannels: string[],
): Promise<StoredMessage[]> {
  const deleted: Array<{ data: string }> = [];
  if (deleteMessages.length) {
    deleted.push(
      ...(
        await client.query<{ data: string }>(
          `DELETE FROM ${s}.messages WHERE owner = $1 AND message_id = ANY($2::text[]) RETURNING data`,
          [owner, deleteMessages],
        )
      ).rows,
    );
  }
  if (deleteChannels.length) {
    await client.query(`DELETE FROM ${s}.channels WHERE owner = $1 AND chat_id = ANY($2::text[])`, [
      owner,
      deleteChannels,
    ]);
    await forgetReadMarks(client, s, owner, deleteChannels);
    deleted.push(
      ...(
        await client.query<{ data: string }>(
          `DELETE FROM ${s}.messages WHERE owner = $1 AND (chat_id = ANY($2::text[]) OR thread_key = ANY($2::text[])) RETURNING data`,
          [owner, deleteChannels],
        )
      ).rows,
    );
  }
  return deleted.map((row) => JSON.parse(row.data) as StoredMessage);
}

/** Numbers the frames after the owner's last seq and appends them to the outbox; returns their seqs. */
async function appendOutbox(
  client: PoolClient,
  s: string,
  owner: Owner,
  frames: ReadonlyArray<readonly [string, string, string | null]>,
  now: () => number,
): Promise<Seq[]> {
  const { rows: counter } = await client.query<{ last_seq: string }>(
    `INSERT INTO ${s}.owners (owner, last_seq) VALUES ($1, $2) ON CONFLICT (owner) DO UPDATE SET last_seq = ${s}.owners.last_seq + $2 RETURNING last_seq`,
    [owner, frames.length],
  );
  const last = Number(counter[0].last_seq);
  const ts = now();
  const seqs: Seq[] = [];
  for (let i = 0; i < frames.length; i++) seqs.push(last - frames.length + 1 + i);
  await client.query(
    `INSERT INTO ${s}.outbox (owner, seq, type, payload, ts, redact_key) SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[])`,
    [owner, seqs, frames.map((f) => f[0]), frames.map((f) => f[1]), frames.map(() => ts), frames.map((f) => f[2])],
  );
  return seqs;
}

/** `Storage.commit`, and a wait for the commits in flight (for `close()`). */
export interface Writer {
  commit(owner: Owner, change: Change): Promise<CommitResult>;
  settled(): Promise<unknown>;
}

/** The writers of one storage. */
export function writer(db: Database, now: () => number): Writer {
  interface Queued {
    change: Change;
    resolve(result: CommitResult): void;
    reject(error: unknown): void;
  }
  /** Per owner: commits waiting for the owner's writer; present while the writer runs. */
  const queues = new Map<Owner, Queued[]>();
  /** The running writers, so close() can wait for them. */
  const writers = new Set<Promise<void>>();
  /** At most this many queued commits share one transaction. */
  const GROUP = 64;

  /**
   * One writer per owner and process applies the owner's commits in call order. Commits that queued
   * up while a transaction ran go into the next one together, each under a savepoint: one that fails
   * is rolled back alone and rejects, the others share a single COMMIT (one WAL flush).
   */
  async function write(owner: Owner, queue: Queued[]): Promise<void> {
    for (;;) {
      const group = queue.splice(0, GROUP);
      if (!group.length) break;
      const outcomes: Array<{ ok: true; result: CommitResult } | { ok: false; error: unknown }> = [];
      try {
        await db.transaction(async (client) => {
          await lockOwner(client, db.s, owner);
          for (const item of group) {
            if (group.length > 1) await client.query("SAVEPOINT one_change");
            try {
              outcomes.push({ ok: true, result: await apply(client, db.s, now, owner, item.change) });
              if (group.length > 1) await client.query("RELEASE SAVEPOINT one_change");
            } catch (error) {
              if (group.length === 1) throw error;
              await client.query("ROLLBACK TO SAVEPOINT one_change");
              outcomes.push({ ok: false, error });
            }
          }
        });
      } catch (error) {
        // The transaction itself failed (connection lost, COMMIT refused): nothing of it is durable.
        for (const item of group) item.reject(error);
        continue;
      }
      group.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome.ok) item.resolve(outcome.result);
        else item.reject(outcome.error);
      });
    }
    queues.delete(owner);
  }

  return {
    commit(owner, change) {
      return new Promise<CommitResult>((resolve, reject) => {
        const queued = queues.get(owner);
        if (queued) {
          queued.push({ change, resolve, reject });
          return;
        }
        const queue: Queued[] = [{ change, resolve, reject }];
        queues.set(owner, queue);
        const running = write(owner, queue);
        writers.add(running);
        void running.finally(() => writers.delete(running));
      });
    },
    settled: () => Promise.allSettled([...writers]),
  };
}
