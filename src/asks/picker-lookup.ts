/**
 * An ask as the outbox keeps it: its picker frame and, once it ended, its `picker.resolved`. Used
 * when no process holds the ask in memory: a late answer, an ask whose process died, start-up.
 * @module
 */
import type { Owner } from "../protocol/ids.js";
import type { OutboxEntry, Storage } from "../contracts/storage.js";
import { PICKER_FRAME_TYPES } from "../protocol/server-frames.js";
import type { PickerSpec } from "./ask-shapes.js";

const PAGE = 500;
const PICKER_TYPES: readonly string[] = [...PICKER_FRAME_TYPES];
/** At most this many frames are read for one lookup; the default retention keeps 10,000. */
const SCAN_MAX = 20_000;

/** What the stored card says, enough to judge an answer. */
export type StoredPicker = Pick<
  PickerSpec,
  "picker_id" | "kind" | "chat_id" | "thread_id" | "message_id" | "choices" | "allow_text"
>;

/** A stored card and, when it ended, how. */
export interface PickerRecord {
  picker: StoredPicker;
  resolved?: Record<string, unknown>;
}

const KINDS: Record<string, PickerSpec["kind"]> = {
  "picker.approval": "approval",
  "picker.confirm": "confirm",
  "picker.model": "model",
};

/** The card of a stored picker frame, or undefined for any other frame. */
export function storedPicker(entry: Pick<OutboxEntry, "type" | "payload">): StoredPicker | undefined {
  const kind = KINDS[entry.type];
  if (!kind) return undefined;
  // biome-ignore lint/suspicious/noExplicitAny: a stored ask of any kind; the fields read below are checked where they are used
  const p = entry.payload as Record<string, any>;
  const list: Array<{ id: string }> = (kind === "model" ? p.models : p.options) ?? [];
  return {
    picker_id: String(p.picker_id),
    kind,
    chat_id: p.chat_id,
    thread_id: p.thread_id ?? null,
    message_id: String(p.message_id ?? ""),
    choices: list.map((c) => c.id),
    allow_text: p.allow_text === true,
  };
}

/** The outbox position a picker id was made at (`pk<seq in base 36>_…`), or undefined for a foreign id. */
function startOf(pickerId: string): number | undefined {
  const match = /^pk([0-9a-z]{1,11})_[0-9A-Za-z_-]{10,40}$/.exec(pickerId);
  return match ? parseInt(match[1]!, 36) : undefined;
}

/**
 * Read the owner's picker frames from `after`, page by page, at most {@link SCAN_MAX} frames,
 * handing each to `visit` until it returns true. The storage skips every other frame by its type
 * (`readOutbox`'s `types`), so a lookup from a position a client chose (a made-up `picker_id`)
 * reads the owner's few asks, never the payloads of its messages.
 */
export async function scanOutbox(
  services: { storage: Storage },
  owner: Owner,
  after: number,
  visit: (entry: OutboxEntry) => boolean,
): Promise<void> {
  let read = 0;
  while (read < SCAN_MAX) {
    const entries = await services.storage.readOutbox(owner, after, PAGE, PICKER_TYPES);
    // A storage may ignore `types`; frames of other types are no ask's.
    for (const entry of entries) if (PICKER_FRAME_TYPES.has(entry.type) && visit(entry)) return;
    // A page ends early at the storage's byte bound, so only an empty one is the end.
    if (entries.length === 0) return;
    read += entries.length;
    after = entries[entries.length - 1]!.seq;
  }
}

/** Find an ask in the owner's outbox; undefined when it is unknown (or another owner's). */
export async function findPicker(
  services: { storage: Storage },
  owner: Owner,
  pickerId: string,
): Promise<PickerRecord | undefined> {
  const start = startOf(pickerId);
  if (start === undefined) return undefined;
  let found: PickerRecord | undefined;
  await scanOutbox(services, owner, start, (entry) => {
    if (entry.payload.picker_id !== pickerId) return false;
    if (entry.type === "picker.resolved") {
      if (found) found.resolved = entry.payload;
      return true;
    }
    const picker = storedPicker(entry);
    if (picker && !found) found = { picker };
    return false;
  });
  return found;
}

/** The asks of these messages that were never resolved (their turn died with its process). */
export async function openPickersOf(
  services: { storage: Storage },
  owner: Owner,
  messageIds: ReadonlySet<string>,
): Promise<StoredPicker[]> {
  const open = new Map<string, StoredPicker>();
  await scanOutbox(services, owner, 0, (entry) => {
    const picker = storedPicker(entry);
    if (picker && messageIds.has(picker.message_id)) open.set(picker.picker_id, picker);
    else if (entry.type === "picker.resolved") open.delete(String(entry.payload.picker_id));
    return false;
  });
  return [...open.values()];
}
