/**
 * What {@link memoryStorage} keeps per owner, in a file of its own because both the commit path
 * (commit.ts) and the reads and adoption (index.ts) work on it.
 * @module
 */
import type {
  Channel,
  ChatId,
  Device,
  DeviceId,
  MediaId,
  MediaRecord,
  MessageId,
  Seq,
  StoredMessage,
} from "chat-gateway";
import type { OutboxEntry, ReadMark } from "chat-gateway/storage";

/** One owner's records. */
export interface OwnerState {
  channels: Map<ChatId, Channel>;
  messages: Map<MessageId, StoredMessage>;
  /** Ascending by `seq`; a redacted entry stays (with `redacted` set) so bounds never move. */
  outbox: Array<OutboxEntry & { redactKey?: string | null; redacted?: true }>;
  lastSeq: Seq;
  devices: Map<DeviceId, Device>;
  media: Map<MediaId, MediaRecord>;
  /** One read watermark per lane (docs/PROTOCOL.md §15). */
  reads: Map<string, ReadMark>;
  /** Each lane's fencing token (`Change.takeLane`), by lane key; a lane never taken has none (0). */
  fences: Map<string, number>;
}

/** The state of an owner that holds nothing yet. */
export function emptyState(): OwnerState {
  return {
    channels: new Map(),
    messages: new Map(),
    outbox: [],
    lastSeq: 0,
    devices: new Map(),
    media: new Map(),
    reads: new Map(),
    fences: new Map(),
  };
}
