/**
 * What a commit keeps consistent beyond its own rows: the messages it requires, which message holds
 * each media, the media that deleted messages take with them, and the redaction of outbox frames
 * showing deleted content.
 * @module
 */
import type { PoolClient } from "pg";
import { expectedChannelsHeld } from "chat-gateway/storage";
import type { Channel, ChatId, MediaId, MediaRecord, MessageId, Owner, StoredMessage } from "chat-gateway";
import type { ChannelExpectation } from "chat-gateway/storage";

/** Whether a message other than `messageId` holds the media (see `Change` in chat-gateway). */
function heldByAnother(record: MediaRecord | undefined, messageId: MessageId): boolean {
  return record?.message_id !== undefined && record.message_id !== messageId;
}

/**
 * Takes the owner's counter row lock for the rest of the transaction: every commit and adoption of
 * the owner, in any process, takes it before it reads or writes anything, so each one's checks
 * (`requireMessages`, `expectChannels`) see every commit before it and hold until it commits.
 */
export async function lockOwner(client: PoolClient, s: string, owner: Owner): Promise<void> {
  const lock = `SELECT 1 FROM ${s}.owners WHERE owner = $1 FOR UPDATE`;
  // One statement once the owner has its row; its first commit makes the row, then locks it.
  if ((await client.query(lock, [owner])).rowCount) return;
  await client.query(`INSERT INTO ${s}.owners (owner) VALUES ($1) ON CONFLICT (owner) DO NOTHING`, [owner]);
  await client.query(lock, [owner]);
}

/** True when every channel exists (see `Change.requireChannels`); the owner's lock keeps it so until the commit. */
export async function channelsPresent(client: PoolClient, s: string, owner: Owner, ids: ChatId[]): Promise<boolean> {
  const wanted = [...new Set(ids)];
  if (!wanted.length) return true;
  const { rows } = await client.query(
    `SELECT chat_id FROM ${s}.channels WHERE owner = $1 AND chat_id = ANY($2::text[])`,
    [owner, wanted],
  );
  return rows.length === wanted.length;
}

/** True when every channel of `expected` is stored as expected (see `Change.expectChannels`). */
export async function channelsAsExpected(
  client: PoolClient,
  s: string,
  owner: Owner,
  expected: ChannelExpectation[],
): Promise<boolean> {
  if (!expected.length) return true;
  const { rows } = await client.query<{ chat_id: ChatId; data: string }>(
    `SELECT chat_id, data FROM ${s}.channels WHERE owner = $1 AND chat_id = ANY($2::text[])`,
    [owner, expected.map((e) => e.chat_id)],
  );
  const stored = new Map(rows.map((r) => [r.chat_id, JSON.parse(r.data) as Channel]));
  return expectedChannelsHeld(
    expected,
    expected.map((e) => stored.get(e.chat_id)),
  );
}

/**
 * True when every message exists. The row locks hold off a delete from another process until this
 * transaction ends; one that committed first is seen, since each statement reads the latest commit.
 */
export async function messagesPresent(client: PoolClient, s: string, owner: Owner, ids: MessageId[]): Promise<boolean> {
  const wanted = [...new Set(ids)];
  if (!wanted.length) return true;
  const { rows } = await client.query(
    `SELECT message_id FROM ${s}.messages WHERE owner = $1 AND message_id = ANY($2::text[]) FOR UPDATE`,
    [owner, wanted],
  );
  return rows.length === wanted.length;
}

async function mediaRecords(
  client: PoolClient,
  s: string,
  owner: Owner,
  ids: MediaId[],
  lock: boolean,
): Promise<Map<MediaId, MediaRecord>> {
  const { rows } = await client.query<{ media_id: MediaId; data: string }>(
    `SELECT media_id, data FROM ${s}.media WHERE owner = $1 AND media_id = ANY($2::text[])${lock ? " FOR UPDATE" : ""}`,
    [owner, ids],
  );
  return new Map(rows.map((r) => [r.media_id, JSON.parse(r.data) as MediaRecord]));
}

/**
 * Marks the messages' media as held by them. The row locks make a second process attaching the same
 * media wait and then see the holder, so two messages never both get it. Returns, having written
 * nothing, the first media another message holds (or two of these messages list).
 */
export async function attachMedia(
  client: PoolClient,
  s: string,
  owner: Owner,
  messages: StoredMessage[],
): Promise<MediaId | undefined> {
  const wanted = [...new Set(messages.flatMap((m) => m.media.map((ref) => ref.media_id)))];
  if (!wanted.length) return undefined;
  const records = await mediaRecords(client, s, owner, wanted, true);
  const claims = new Map<MediaId, MessageId>();
  for (const m of messages) {
    for (const ref of m.media) {
      const claimed = claims.get(ref.media_id);
      if ((claimed !== undefined && claimed !== m.message_id) || heldByAnother(records.get(ref.media_id), m.message_id))
        return ref.media_id;
      claims.set(ref.media_id, m.message_id);
    }
  }
  for (const [mediaId, messageId] of claims) {
    const record = records.get(mediaId);
    if (!record || record.message_id === messageId) continue;
    await client.query(`UPDATE ${s}.media SET data = $3 WHERE owner = $1 AND media_id = $2`, [
      owner,
      mediaId,
      JSON.stringify({ ...record, message_id: messageId }),
    ]);
  }
  return undefined;
}

/** Deletes the media metadata that the deleted messages held (not what another message holds); returns those ids. */
export async function dropMediaOf(
  client: PoolClient,
  s: string,
  owner: Owner,
  deleted: StoredMessage[],
): Promise<MediaId[]> {
  const refs = deleted.flatMap((m) => m.media.map((ref) => ({ mediaId: ref.media_id, messageId: m.message_id })));
  if (!refs.length) return [];
  const records = await mediaRecords(client, s, owner, [...new Set(refs.map((r) => r.mediaId))], false);
  const orphaned = [
    ...new Set(refs.filter((r) => !heldByAnother(records.get(r.mediaId), r.messageId)).map((r) => r.mediaId)),
  ];
  if (orphaned.length)
    await client.query(`DELETE FROM ${s}.media WHERE owner = $1 AND media_id = ANY($2::text[])`, [owner, orphaned]);
  return orphaned;
}

/** Redacts the frames showing deleted messages and channels: the rows (and seqs) stay, their content goes. */
export async function redactOutbox(
  client: PoolClient,
  s: string,
  owner: Owner,
  deleted: StoredMessage[],
  channels: ChatId[],
): Promise<void> {
  // The key formats of OutboxFrame.redactKey in the storage contract.
  const keys = [...deleted.map((m) => `m:${m.message_id}`), ...channels.map((chatId) => `c:${chatId}`)];
  if (!keys.length) return;
  await client.query(
    `UPDATE ${s}.outbox SET type = '', payload = '{}', redact_key = NULL WHERE owner = $1 AND redact_key = ANY($2::text[])`,
    [owner, keys],
  );
}
