/**
 * The commit path of {@link memoryStorage}: one change applied to an owner's state all or nothing,
 * with the media each message holds and the outbox frames that deleted content redacts.
 * @module
 */
import type { MediaId, MediaRecord, MessageId, Seq, StoredMessage } from "chat-gateway";
import type { Change, CommitResult } from "chat-gateway/storage";
import { expectedChannelsHeld } from "chat-gateway/storage";
import type { OwnerState } from "./owner-state.js";
import { forgetMarks, laneKey, movesForward } from "./read-marks.js";

/** Whether a message other than `messageId` holds the media (see `Change` in chat-gateway). */
function heldByAnother(record: MediaRecord | undefined, messageId: MessageId): boolean {
  return record?.message_id !== undefined && record.message_id !== messageId;
}

function deleteMessage(s: OwnerState, id: MessageId, orphaned: Set<MediaId>, redact: Set<string>): void {
  const m = s.messages.get(id);
  if (!m) return;
  s.messages.delete(id);
  redact.add(`m:${id}`);
  for (const ref of m.media) {
    if (heldByAnother(s.media.get(ref.media_id), id)) continue;
    orphaned.add(ref.media_id);
    s.media.delete(ref.media_id);
  }
}

/** The first media the messages would take from another message; checked before anything is applied. */
function takenMedia(s: OwnerState, messages: StoredMessage[]): MediaId | undefined {
  const claimed = new Map<MediaId, MessageId>();
  for (const m of messages) {
    for (const ref of m.media) {
      const other = claimed.get(ref.media_id);
      if ((other !== undefined && other !== m.message_id) || heldByAnother(s.media.get(ref.media_id), m.message_id))
        return ref.media_id;
      claimed.set(ref.media_id, m.message_id);
    }
  }
  return undefined;
}

function attach(s: OwnerState, m: StoredMessage): void {
  for (const ref of m.media) {
    const record = s.media.get(ref.media_id);
    if (record) record.message_id = m.message_id;
  }
}

/** A linear pass over the owner's outbox, which retention bounds. */
function redactOutbox(s: OwnerState, keys: Set<string>): void {
  if (keys.size === 0) return;
  s.outbox.forEach((entry, i) => {
    const key = entry.redacted ? undefined : entry.redactKey;
    if (typeof key === "string" && keys.has(key))
      s.outbox[i] = { seq: entry.seq, ts: entry.ts, type: "", payload: {}, redacted: true };
  });
}

/** A change to apply nothing of, with why. */
const SKIPPED: CommitResult = { seqs: [], orphanedMedia: [], skipped: true };

/**
 * Whether the messages, channels, lane token and read mark the change depends on are as it
 * requires; the `fenced` result when only the lane token moved on.
 */
function preconditions(s: OwnerState, c: Change): CommitResult | undefined {
  if (c.fence && (s.fences.get(laneKey(c.fence)) ?? 0) !== c.fence.token) return { ...SKIPPED, fenced: true };
  if (c.requireMessages?.some((id) => !s.messages.has(id))) return SKIPPED;
  if (c.requireStreaming?.some((id) => s.messages.get(id)?.status !== "streaming")) return SKIPPED;
  if (c.requireChannels?.some((id) => !s.channels.has(id))) return SKIPPED;
  const expected = c.expectChannels ?? [];
  if (
    !expectedChannelsHeld(
      expected,
      expected.map((e) => s.channels.get(e.chat_id)),
    )
  )
    return SKIPPED;
  if (c.read && !movesForward(s.reads, c.read)) return SKIPPED;
  return undefined;
}

/** Apply one change to an owner's state, all or nothing (see the clone at the top). */
export function applyChange(s: OwnerState, change: Change, now: () => number): CommitResult {
  // Clone everything before touching state: a value that cannot be stored throws here, while
  // nothing has been applied yet, which is what keeps the commit all-or-nothing.
  const c = structuredClone(change);
  // Commits run to the end without awaiting, so these checks and the writes below are one step.
  const refused = preconditions(s, c);
  if (refused) return { ...refused, seqs: [], orphanedMedia: [] };
  const mediaTaken = takenMedia(s, c.messages ?? []);
  if (mediaTaken !== undefined) return { seqs: [], orphanedMedia: [], mediaTaken };
  for (const ch of c.channels ?? []) s.channels.set(ch.chat_id, ch);
  for (const m of c.messages ?? []) {
    s.messages.set(m.message_id, m);
    attach(s, m);
  }
  const orphaned = new Set<MediaId>();
  const redact = new Set<string>();
  for (const id of c.deleteMessages ?? []) deleteMessage(s, id, orphaned, redact);
  for (const id of c.answered ?? []) delete s.messages.get(id)?.waiting;
  if (c.deleteChannels?.length) {
    const gone = new Set(c.deleteChannels);
    for (const id of gone) {
      s.channels.delete(id);
      redact.add(`c:${id}`);
    }
    forgetMarks(s.reads, gone);
    for (const m of [...s.messages.values()]) {
      if (gone.has(m.chat_id) || (m.thread_id !== null && gone.has(m.thread_id))) {
        deleteMessage(s, m.message_id, orphaned, redact);
      }
    }
  }
  redactOutbox(s, redact);
  if (c.read) s.reads.set(laneKey(c.read), c.read);
  const seqs: Seq[] = [];
  const ts = now();
  for (const frame of c.outbox ?? []) {
    const seq = ++s.lastSeq;
    s.outbox.push({ type: frame.type, payload: frame.payload, redactKey: frame.redactKey, seq, ts });
    seqs.push(seq);
  }
  if (!c.takeLane) return { seqs, orphanedMedia: [...orphaned] };
  const fence = (s.fences.get(laneKey(c.takeLane)) ?? 0) + 1;
  s.fences.set(laneKey(c.takeLane), fence);
  return { seqs, orphanedMedia: [...orphaned], fence };
}
