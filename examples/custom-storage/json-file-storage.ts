// A complete chat-gateway storage on JSON files, one file per owner, written for reading: it
// implements only the required core, so the gateway fills in search, lookups, pruning and the
// rest with its fallbacks. docs/CUSTOM-STORAGE.md walks through it; test/storage/custom-storage.test.ts
// runs the conformance kit against it.
//
// Fine for a few owners with a few thousand messages each: every write rewrites the owner's file.
import { mkdir, open, rename } from "node:fs/promises";
import { join } from "node:path";
import { defineStorage, expectedChannelsHeld } from "chat-gateway/storage";
import type { Channel, ChatId, Device, DeviceId, MessageId, Owner, StoredMessage } from "chat-gateway";
import type {
  Change,
  CommitResult,
  HistoryPage,
  HistoryQuery,
  OutboxEntry,
  OutboxFrame,
  Storage,
} from "chat-gateway/storage";

/** Everything one owner has: what its file holds. */
interface OwnerData {
  channels: Record<ChatId, Channel>;
  messages: Record<MessageId, StoredMessage>;
  /**
   * Ascending by seq, each with the redaction key the gateway gave it. A redacted frame stays,
   * emptied, so seqs and bounds never move.
   */
  outbox: Array<OutboxEntry & Pick<OutboxFrame, "redactKey"> & { redacted?: true }>;
  lastSeq: number;
  devices: Record<DeviceId, Device>;
}

const empty = (): OwnerData => ({ channels: {}, messages: {}, outbox: [], lastSeq: 0, devices: {} });

/** Options of {@link jsonFileStorage}. */
export interface JsonFileStorageOptions {
  /** The folder that holds one `<owner>.json` per owner. Created by `open()`. */
  dir: string;
}

/** Each owner's data, read from its file once and replaced on disk by every write. */
function ownerFiles(dir: string) {
  const owners = new Map<Owner, Promise<OwnerData>>();
  /** The last write of each owner: writes chain on it, so they apply in call order. */
  const writes = new Map<Owner, Promise<unknown>>();

  // The owner is user data: hex keeps it from ever naming another path.
  const fileOf = (owner: Owner) => join(dir, `${Buffer.from(owner).toString("hex")}.json`);

  function load(owner: Owner): Promise<OwnerData> {
    let data = owners.get(owner);
    if (!data) {
      data = readJson(fileOf(owner));
      owners.set(owner, data);
    }
    return data;
  }

  /**
   * Runs `apply` on a copy of the owner's data, writes the copy to disk and only then makes it
   * current: a change that throws, or a file that cannot be written, leaves no trace anywhere.
   */
  function write<T>(owner: Owner, apply: (draft: OwnerData) => T): Promise<T> {
    const run = (writes.get(owner) ?? Promise.resolve()).then(async () => {
      const draft = structuredClone(await load(owner));
      const result = apply(draft);
      await writeJsonDurably(fileOf(owner), dir, draft);
      owners.set(owner, Promise.resolve(draft));
      return result;
    });
    writes.set(
      owner,
      run.catch(() => undefined),
    );
    return run;
  }

  /** Resolves once every write asked for so far is done. */
  const settled = () => Promise.all(writes.values());
  return { load, write, settled };
}

/** A storage that keeps each owner in one JSON file, replaced atomically on every write. */
export function jsonFileStorage(options: JsonFileStorageOptions): Storage {
  const { load, write, settled } = ownerFiles(options.dir);

  return defineStorage({
    async open() {
      await mkdir(options.dir, { recursive: true, mode: 0o700 });
    },

    async close() {
      await settled();
    },

    async commit(owner: Owner, change: Change): Promise<CommitResult> {
      // Cloned first: a value that cannot be cloned rejects here, before anything is applied.
      const c = structuredClone(change);
      return write(owner, (d) => applyChange(d, c));
    },

    async getMessage(owner, messageId) {
      const m = (await load(owner)).messages[messageId];
      return m && structuredClone(m);
    },

    async history(owner: Owner, query: HistoryQuery): Promise<HistoryPage | undefined> {
      const lane = Object.values((await load(owner)).messages)
        .filter((m) => m.chat_id === query.chat_id && m.thread_id === query.thread_id)
        .sort((a, b) => a.ts - b.ts || (a.message_id < b.message_id ? -1 : a.message_id > b.message_id ? 1 : 0));
      const end = query.before === undefined ? lane.length : lane.findIndex((m) => m.message_id === query.before);
      if (end < 0) return undefined;
      const start = Math.max(0, end - query.limit);
      return { messages: structuredClone(lane.slice(start, end)), has_more: start > 0 };
    },

    async listChannels(owner) {
      return structuredClone(Object.values((await load(owner)).channels));
    },

    async readOutbox(owner, after, limit) {
      const kept = (await load(owner)).outbox.filter((e) => e.seq > after && !e.redacted);
      return kept.slice(0, limit).map(({ seq, ts, type, payload }) => structuredClone({ seq, ts, type, payload }));
    },

    async outboxBounds(owner) {
      const { outbox, lastSeq } = await load(owner);
      return { first: outbox[0]?.seq ?? lastSeq + 1, last: lastSeq };
    },

    async listDevices(owner) {
      return structuredClone(Object.values((await load(owner)).devices));
    },

    async putDevice(owner, device) {
      const d = structuredClone(device);
      await write(owner, (draft) => {
        draft.devices[d.device_id] = d;
      });
    },
  });
}

/**
 * Applies a change to `d` in the order the contract gives: check, upserts, deletions, outbox.
 * Redaction is plain data: a deleted message takes the frames keyed `m:<message_id>`, a deleted
 * channel those keyed `c:<chat_id>` (the `redactKey` each frame came with).
 */
function applyChange(d: OwnerData, c: Change): CommitResult {
  if (c.requireMessages?.some((id) => !d.messages[id])) return { seqs: [], orphanedMedia: [], skipped: true };
  // An answer is ended once: a second final (from another process, or a late one) applies nothing.
  if (c.requireStreaming?.some((id) => d.messages[id]?.status !== "streaming"))
    return { seqs: [], orphanedMedia: [], skipped: true };
  if (c.requireChannels?.some((id) => !d.channels[id])) return { seqs: [], orphanedMedia: [], skipped: true };
  // Writes of one owner apply one at a time, so nothing changes between this check and the writes.
  const expected = c.expectChannels ?? [];
  if (
    !expectedChannelsHeld(
      expected,
      expected.map((e) => d.channels[e.chat_id]),
    )
  )
    return { seqs: [], orphanedMedia: [], skipped: true };
  for (const ch of c.channels ?? []) d.channels[ch.chat_id] = ch;
  for (const m of c.messages ?? []) d.messages[m.message_id] = m;
  const redact = new Set<string>();
  const deleteMessage = (id: MessageId) => {
    if (!d.messages[id]) return;
    delete d.messages[id];
    redact.add(`m:${id}`);
  };
  for (const id of c.deleteMessages ?? []) deleteMessage(id);
  const gone = new Set(c.deleteChannels ?? []);
  for (const id of gone) {
    delete d.channels[id];
    redact.add(`c:${id}`);
  }
  for (const m of Object.values(d.messages)) {
    if (gone.has(m.chat_id) || (m.thread_id !== null && gone.has(m.thread_id))) deleteMessage(m.message_id);
  }
  d.outbox = d.outbox.map((e) =>
    !e.redacted && redact.has(e.redactKey ?? "") ? { seq: e.seq, ts: e.ts, type: "", payload: {}, redacted: true } : e,
  );
  const ts = Date.now();
  const seqs = (c.outbox ?? []).map((frame) => {
    d.outbox.push({ ...frame, seq: ++d.lastSeq, ts });
    return d.lastSeq;
  });
  // No media capability: no message lists media the gateway tracks, so nothing is orphaned.
  return { seqs, orphanedMedia: [] };
}

async function readJson(file: string): Promise<OwnerData> {
  const handle = await open(file, "r").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (!handle) return empty();
  try {
    return JSON.parse(await handle.readFile("utf8")) as OwnerData;
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `file` so that a crash leaves the old content or the new one, never half of either:
 * write a temporary file, fsync it, rename it over the old one, fsync the folder.
 */
async function writeJsonDurably(file: string, dir: string, data: OwnerData): Promise<void> {
  // JSON.stringify throws on a BigInt; it would drop functions and symbols silently.
  const text = JSON.stringify(data);
  const temp = `${file}.tmp`;
  const handle = await open(temp, "w", 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, file);
  const folder = await open(dir, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
