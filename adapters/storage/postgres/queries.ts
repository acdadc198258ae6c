/**
 * The reads of the PostgreSQL storage: channels, messages, a lane's history pages, the outbox, and
 * devices and media records with their single-row writes. Search is in `search-plan.ts`.
 * @module
 */
import type { Channel, Device, MediaRecord, Owner, StoredMessage } from "chat-gateway";
import type {
  HistoryPage,
  HistoryQuery,
  OutboxBounds,
  OutboxEntry,
  RetentionPolicy,
  Storage,
  TurnScope,
} from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import type { Database } from "./database.js";
import { laneKey } from "./rows.js";

/** The storage methods that read, and those that write one record outside a commit. */
export type Queries = Omit<
  Storage,
  | "open"
  | "close"
  | "ping"
  | "commit"
  | "search"
  | "adoptOwner"
  | "capabilities"
  | "readMarks"
  | "unreadCounts"
  | "putHook"
  | "getHook"
  | "listHooks"
  | "deleteHook"
  | "claimHookKey"
  | "settleHookKey"
  | ScheduleMember
>;

type ScheduleMember =
  | "putSchedule"
  | "listSchedules"
  | "allSchedules"
  | "deleteSchedule"
  | "claimScheduleSlot"
  | "recordScheduleRun";

/** The tables whose rows are one JSON record (`data`) under the owner and a key column. */
type RecordTable =
  | { table: "channels"; key: "chat_id" }
  | { table: "messages"; key: "message_id" }
  | { table: "devices"; key: "device_id" }
  | { table: "media"; key: "media_id" };

/** Reads and writes of one-record rows: the table and column names are the code's own, never input. */
function records(db: Database) {
  const { s, rows } = db;
  return {
    async one<T>({ table, key }: RecordTable, owner: Owner, id: string): Promise<T | undefined> {
      const [row] = await rows<{ data: string }>(`SELECT data FROM ${s}.${table} WHERE owner = $1 AND ${key} = $2`, [
        owner,
        id,
      ]);
      return row && (JSON.parse(row.data) as T);
    },
    async all<T>({ table }: RecordTable, owner: Owner): Promise<T[]> {
      return (await rows<{ data: string }>(`SELECT data FROM ${s}.${table} WHERE owner = $1`, [owner])).map(
        (r) => JSON.parse(r.data) as T,
      );
    },
    async put({ table, key }: RecordTable, owner: Owner, id: string, record: unknown): Promise<void> {
      await rows(
        `INSERT INTO ${s}.${table} (owner, ${key}, data) VALUES ($1, $2, $3) ON CONFLICT (owner, ${key}) DO UPDATE SET data = EXCLUDED.data`,
        [owner, id, JSON.stringify(record)],
      );
    },
  };
}

const CHANNELS: RecordTable = { table: "channels", key: "chat_id" };
const MESSAGES: RecordTable = { table: "messages", key: "message_id" };
const DEVICES: RecordTable = { table: "devices", key: "device_id" };
const MEDIA: RecordTable = { table: "media", key: "media_id" };

/** The outbox reads and retention of one storage. */
function outboxQueries(db: Database): Pick<Queries, "readOutbox" | "outboxBounds" | "pruneOutbox"> {
  const { s, rows } = db;
  return {
    async readOutbox(owner, after, limit, types): Promise<OutboxEntry[]> {
      if (!(limit > 0)) return [];
      const cap = Number.isFinite(limit) ? ` LIMIT ${Math.floor(limit)}` : "";
      return (
        // The page ends once the frames before a row hold the contract's byte bound (LIMITS.storagePageBytes).
        (
          await rows<{ seq: string; type: string; payload: string; ts: string }>(
            `SELECT seq, type, payload, ts FROM (
             SELECT seq, type, payload, ts, sum(octet_length(payload)) OVER (ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS above
             FROM ${s}.outbox WHERE owner = $1 AND seq > $2 AND ${types ? "type = ANY($3::text[])" : "type <> ''"} ORDER BY seq${cap}) page
           WHERE coalesce(above, 0) < ${LIMITS.storagePageBytes}`,
            types ? [owner, after, [...types]] : [owner, after],
          )
        ).map((r) => ({
          type: r.type,
          payload: JSON.parse(r.payload) as Record<string, unknown>,
          seq: Number(r.seq),
          ts: Number(r.ts),
        }))
      );
    },

    async outboxBounds(owner): Promise<OutboxBounds> {
      const [row] = await rows<{ last: string | null; first: string | null }>(
        `SELECT (SELECT last_seq FROM ${s}.owners WHERE owner = $1) AS last, (SELECT min(seq) FROM ${s}.outbox WHERE owner = $1) AS first`,
        [owner],
      );
      const last = Number(row?.last ?? 0);
      return { first: row?.first != null ? Number(row.first) : last + 1, last };
    },

    async pruneOutbox(owner: Owner, policy: RetentionPolicy, at: number): Promise<void> {
      const clauses: string[] = [];
      const values: unknown[] = [owner];
      if (Number.isFinite(policy.maxFrames)) {
        values.push(Math.max(0, Math.floor(policy.maxFrames)));
        clauses.push(`seq <= (SELECT last_seq FROM ${s}.owners WHERE owner = $1) - $${values.length}`);
      }
      if (Number.isFinite(policy.maxAgeMs)) {
        values.push(Math.floor(at - policy.maxAgeMs));
        clauses.push(`ts < $${values.length}`);
      }
      if (!clauses.length) return;
      await rows(`DELETE FROM ${s}.outbox WHERE owner = $1 AND (${clauses.join(" OR ")})`, values);
    },
  };
}

/** The turn reads of one storage: streaming answers and waiting user messages, of every owner or of one lane. */
function turnQueries(db: Database): Pick<Queries, "unfinishedMessages" | "waitingTurns"> {
  const { s, rows } = db;
  /** Messages matching `where`, of every owner or of one lane. */
  async function turnRows(
    where: string,
    scope: TurnScope | undefined,
    order: string,
  ): Promise<Array<{ owner: Owner; message: StoredMessage }>> {
    const found =
      scope?.chat_id !== undefined
        ? await rows<{ owner: string; data: string }>(
            `SELECT owner, data FROM ${s}.messages WHERE ${where} AND owner = $1 AND chat_id = $2 AND thread_key = $3${order}`,
            [scope.owner, scope.chat_id, laneKey(scope.thread_id ?? null)],
          )
        : scope
          ? await rows<{ owner: string; data: string }>(
              `SELECT owner, data FROM ${s}.messages WHERE ${where} AND owner = $1${order}`,
              [scope.owner],
            )
          : await rows<{ owner: string; data: string }>(
              `SELECT owner, data FROM ${s}.messages WHERE ${where}${order}`,
              [],
            );
    return found.map((r) => ({ owner: r.owner, message: JSON.parse(r.data) as StoredMessage }));
  }
  return {
    async unfinishedMessages(scope?: TurnScope) {
      return turnRows("role = 'assistant' AND status = 'streaming'", scope, "");
    },

    async waitingTurns(scope?: TurnScope) {
      return turnRows("status = 'waiting'", scope, " ORDER BY owner, chat_id, thread_key, ts, message_id");
    },
  };
}

/** The queries of one storage. */
export function queries(db: Database): Queries {
  const { s, rows } = db;
  const { one, all, put } = records(db);
  return {
    getChannel: (owner, chatId) => one<Channel>(CHANNELS, owner, chatId),
    listChannels: (owner) => all<Channel>(CHANNELS, owner),
    getMessage: (owner, messageId) => one<StoredMessage>(MESSAGES, owner, messageId),

    async findByClientMsgId(owner, chatId, clientMsgId) {
      const [row] = await rows<{ data: string }>(
        `SELECT data FROM ${s}.messages WHERE owner = $1 AND client_msg_id = $3 AND (chat_id = $2 OR thread_key = $2) ORDER BY ts LIMIT 1`,
        [owner, chatId, clientMsgId],
      );
      return row && (JSON.parse(row.data) as StoredMessage);
    },

    async history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined> {
      const lane = [owner, query.chat_id, laneKey(query.thread_id ?? null)];
      let before = "";
      const values: unknown[] = [...lane];
      if (query.before !== undefined) {
        const [anchor] = await rows<{ ts: string }>(
          `SELECT ts FROM ${s}.messages WHERE owner = $1 AND chat_id = $2 AND thread_key = $3 AND message_id = $4`,
          [...lane, query.before],
        );
        if (!anchor) return undefined;
        before = " AND (ts, message_id) < ($4::bigint, $5::text)";
        values.push(anchor.ts, query.before);
      }
      // Newest first; a row is sent only while the rows before it hold less than the contract's byte
      // bound (LIMITS.storagePageBytes), so the page ends early there. octet_length reads a stored
      // value's size without reading the value.
      const page = await rows<{ data: string | null }>(
        `SELECT CASE WHEN coalesce(above, 0) < ${LIMITS.storagePageBytes} THEN data END AS data FROM (
           SELECT data, sum(octet_length(data)) OVER (ORDER BY ts DESC, message_id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS above
           FROM ${s}.messages WHERE owner = $1 AND chat_id = $2 AND thread_key = $3${before}
           ORDER BY ts DESC, message_id DESC LIMIT ${Math.max(0, Math.floor(query.limit)) + 1}) page`,
        values,
      );
      const kept = page.slice(0, query.limit).filter((r) => r.data !== null);
      const hasMore = page.length > kept.length;
      const messages = kept.map((r) => JSON.parse(r.data!) as StoredMessage);
      return { messages: messages.reverse(), has_more: hasMore };
    },

    ...turnQueries(db),
    ...outboxQueries(db),

    getDevice: (owner, deviceId) => one<Device>(DEVICES, owner, deviceId),
    listDevices: (owner) => all<Device>(DEVICES, owner),
    putDevice: (owner, device) => put(DEVICES, owner, device.device_id, device),
    getMedia: (owner, mediaId) => one<MediaRecord>(MEDIA, owner, mediaId),
    putMedia: (owner, media) => put(MEDIA, owner, media.media_id, media),

    async deleteMedia(owner, mediaIds) {
      if (!mediaIds.length) return;
      await rows(`DELETE FROM ${s}.media WHERE owner = $1 AND media_id = ANY($2::text[])`, [owner, mediaIds]);
    },
  };
}
