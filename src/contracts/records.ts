/**
 * The records of the protocol, in their wire shape (snake_case, as docs/PROTOCOL.md names them). Storage
 * keeps the same shapes, so nothing is translated between the database and the wire.
 * @module
 */
import type { ChatId, DeviceId, MediaId, MessageId, Owner } from "../protocol/ids.js";

/** Kind of a channel entry (docs/PROTOCOL.md §3). */
export type ChannelKind = "default" | "channel" | "thread";

/** A channel or a thread (docs/PROTOCOL.md §3). */
export interface Channel {
  chat_id: ChatId;
  name: string;
  kind: ChannelKind;
  /** Parent channel of a thread; null otherwise. */
  parent_chat_id: ChatId | null;
  /** Marks the owner's current default channel. */
  is_default: boolean;
  archived: boolean;
  /**
   * True on the `channel.created` of a thread the gateway minted itself (auto-threading), and only
   * there: it is not stored, so `channel.list`, `channel.renamed` and the server-side API never carry it.
   */
  auto?: boolean;
  /** Favorites sort to the top of the list. */
  favorite?: boolean;
  /** Base64 PNG or JPEG; null or absent means a letter avatar. */
  icon?: string | null;
  /** `#RRGGBB`; null or absent means a colour derived from the name. */
  color?: string | null;
  /** Read-only for the user: only the gateway posts into it. Never set on the default channel. */
  automation?: boolean;
  /** Creation time, epoch milliseconds (extension; used for stable ordering). */
  created_ts?: number;
  /**
   * The model the person chose for this lane (the channel's flat lane, or this thread) with
   * `picker.model` or `/model` (docs/PROTOCOL.md §11); given to later turns as `TurnInput.model`.
   * Not sent on the wire.
   */
  model?: string;
}

/** Kind of a media item (docs/PROTOCOL.md §7). */
export type MediaKind = "image" | "audio" | "video" | "document" | "voice";

/** A reference to stored media (docs/PROTOCOL.md §7). */
export interface MediaRef {
  media_id: MediaId;
  kind: MediaKind;
  mime: string;
  /** Bytes. */
  size: number;
  filename: string;
  /** Set on `media.offer` to tie it to the assistant message it belongs to. */
  message_id?: MessageId;
}

/** Runtime metadata shown in a client's footer (docs/PROTOCOL.md §4.2). Every key is absent when unknown. */
export interface RuntimeInfo {
  /** Bare model id, vendor prefix dropped. */
  model?: string;
  /** Context occupancy of the last call, 0 to 100. */
  context_pct?: number;
  /** Working directory, home-relative (`~/…`). */
  cwd?: string;
  /** Wall-clock duration of the turn, seconds. */
  latency?: number;
  /** Cost of the turn, USD. */
  cost?: number;
}

/** Role of a stored message. */
export type Role = "user" | "assistant";

/**
 * How an assistant message ended (extension). `complete` is the normal end; `stopped` by `/stop`;
 * `interrupted` by a gateway restart mid-turn; `error` when the runtime failed or timed out;
 * `streaming` while the turn is still running.
 */
export type MessageStatus = "complete" | "streaming" | "stopped" | "interrupted" | "error";

/** A history item (docs/PROTOCOL.md §5). */
export interface HistoryItem {
  message_id: MessageId;
  role: Role;
  text: string;
  reasoning: string;
  model?: string;
  tokens?: number;
  runtime?: RuntimeInfo;
  /** Epoch milliseconds. */
  ts: number;
  media: MediaRef[];
  /** Extension: how an assistant message ended; absent on user messages. */
  status?: MessageStatus;
  /**
   * Extension, `history` only: this message alone was larger than the page's byte cap
   * (`hello.ok.limits.history_max_bytes`), so its `text`, `reasoning` and tool calls were cut to fit
   * (docs/PROTOCOL.md §5). Never stored.
   */
  truncated?: true;
  /** Extension (docs/PROTOCOL.md §14): an assistant answer's tool calls, in call order. */
  tools?: ToolCall[];
  /** Extension (docs/PROTOCOL.md §14): a user message whose text is a gateway command (`/stop`, `/approve`, …). */
  command?: true;
  /** Extension (docs/PROTOCOL.md §14.5): the asks of an assistant answer as they ended, in the order they ended. */
  asks?: AnsweredAsk[];
}

/**
 * An ask of an answer as it ended (docs/PROTOCOL.md §14.5, extension): what was asked, what was
 * answered, by which device. Kept on the answer so history shows it on every device.
 */
export interface AnsweredAsk {
  picker_id: string;
  kind: "approval" | "confirm" | "model";
  /** The card's title. */
  title: string;
  outcome: "selected" | "expired" | "cancelled" | "interrupted";
  /** The chosen option (a model id for a model ask). */
  option_id?: string;
  /** The chosen option's label, as the card showed it. */
  label?: string;
  /** A text answer. */
  text?: string;
  /** The device that answered. */
  device_id?: string;
  /** That device's name, as its `hello` gave it. */
  device_name?: string;
  /** When the ask ended, epoch milliseconds. */
  ts: number;
}

/** A tool call kept on its answer (docs/PROTOCOL.md §14, extension). */
export interface ToolCall {
  /** The call's index within the answer, as on `tool.start` and `tool.end`. */
  index: number;
  name: string;
  /** One-line summary of the arguments. */
  preview: string;
  /** The arguments; when `truncated`, possibly their JSON text cut (at 16 KiB or shorter) instead. */
  args: Record<string, unknown> | string;
  /** The result (text or any JSON value; its JSON text cut, at 16 KiB or shorter, when `truncated`); `null` when none or still running when the turn ended. */
  output: unknown;
  /** False when the tool failed, or was still running when the turn ended. */
  ok: boolean;
  /** Seconds. */
  duration: number;
  /**
   * Set when `args` or `output` was cut: to its 16 KiB bound, to the 256 KiB of an answer's tool
   * calls together, or (`history` only) to fit the page (docs/PROTOCOL.md §14.1, §5).
   */
  truncated?: true;
}

/** A message as storage keeps it: the history item plus where it lives. */
export interface StoredMessage extends HistoryItem {
  /** The channel (for a thread message: the thread's parent channel). */
  chat_id: ChatId;
  /** The thread, or null in the channel's flat lane. */
  thread_id: ChatId | null;
  reply_to?: MessageId;
  /** The sender's idempotency key (extension): a retry with the same key in the same chat is recognised. */
  client_msg_id?: string;
  /**
   * Storage only, never on the wire: a user message whose turn has not ended yet (the durable turn
   * queue, docs/PROTOCOL.md §4.2). Set by the gateway when it stores the message on a storage with
   * the `waitingTurns` capability; cleared by the commit that stores its answer's end
   * (`Change.answered` of `chat-gateway/storage`).
   */
  waiting?: true;
  /**
   * Storage only, never on the wire: sent with `when_busy: "interrupt"` (docs/PROTOCOL.md §14.4),
   * so it runs ahead of the lane's other waiting messages.
   */
  interrupt?: true;
  /**
   * Storage only, never on the wire: the owner's newest outbox `seq` when a message with a
   * `client_msg_id` was stored, so a retry finds its echo frame again (docs/PROTOCOL.md §4.1).
   */
  echo_after?: number;
}

/** A search hit (docs/PROTOCOL.md §5). */
export interface SearchHit {
  message_id: MessageId;
  chat_id: ChatId;
  thread_id: ChatId | null;
  role: Role;
  /** Matching text with context, at most 200 characters. */
  snippet: string;
  ts: number;
}

/** Kind of a notification (docs/PROTOCOL.md §6). */
export type NotificationKind =
  | "channel_renamed"
  | "channel_created"
  | "channel_deleted"
  | "cron"
  | "approval"
  | "clarify"
  | "generic";

/** A gateway-originated notice (docs/PROTOCOL.md §6). */
export interface Notification {
  kind: NotificationKind;
  title: string;
  body: string;
  ts: number;
  /** Optional lane the notice concerns. */
  chat_id?: ChatId;
  thread_id?: ChatId | null;
  /** The open ask an `approval` or `clarify` notification is about (docs/PROTOCOL.md §11). */
  picker_id?: string;
}

/** Category of a slash command (docs/PROTOCOL.md §6). */
export type CommandCategory = "Session" | "Configuration" | "Tools & Skills" | "Info" | "Exit" | "Plugin";

/** A slash command in the catalog (docs/PROTOCOL.md §6). */
export interface CommandEntry {
  /** Canonical name with a leading slash. */
  name: string;
  description: string;
  /** Argument placeholder; empty string when there is none. */
  args_hint: string;
  category: CommandCategory;
  /** Alternative names, each with a leading slash. */
  aliases: string[];
}

/** What a device declares in `hello.caps`. */
export interface DeviceCaps {
  min_protocol: number;
  /** False: no `media.offer` and no media bytes for this device. */
  media: boolean;
  /**
   * Push channel this device takes: "fcm", "ntfy", "webpush" or "none" (the default). It is honoured: a
   * device is pushed only by the sender of that name, and never with "none", whatever tokens it has.
   */
  push: string;
  /** Extension, default true: false means one `message` frame instead of start/update/stop. */
  streaming: boolean;
  /**
   * Extension, default false: the device shows `picker.*` cards (docs/PROTOCOL.md §11). Without it
   * the device gets the ask's `notification` instead and answers by slash command.
   */
  pickers?: boolean;
  /**
   * Extension, absent = false (records stored before it have none): true means `message.update` carries `offset`/`append` (what follows
   * the text this device holds) instead of the whole text (docs/PROTOCOL.md §12).
   */
  delta?: boolean;
}

/**
 * A browser's Web Push subscription (RFC 8030), the JSON of a `PushSubscription` without its
 * `expirationTime`: where to post (`endpoint`, always `https:`) and the keys the payload is
 * encrypted for (RFC 8291), both base64url.
 */
export interface WebPushSubscription {
  endpoint: string;
  keys: {
    /** The browser's P-256 public key, an uncompressed point (65 bytes). */
    p256dh: string;
    /** The authentication secret (16 bytes). */
    auth: string;
  };
}

/** A device as storage keeps it; updated on every `hello` and `fcm.register`. */
export interface Device {
  device_id: DeviceId;
  device_name: string;
  caps: DeviceCaps;
  fcm_token?: string;
  ntfy_topic?: string;
  /** The browser's Web Push subscription (docs/PROTOCOL.md §16), as `hello` or `fcm.register` gave it. */
  webpush?: WebPushSubscription;
  /**
   * Epoch milliseconds of the latest hello, to within an hour: a hello that changes nothing else
   * does not write the record again until the stored `last_seen` is an hour old.
   */
  last_seen: number;
}

/**
 * Media metadata as storage keeps it; the bytes live in a {@link MediaStore}. `message_id` is the
 * message holding the media: set when a message is stored with it (or, for an assistant's media,
 * when the runtime produced it); absent for an upload no message uses yet.
 */
export interface MediaRecord extends MediaRef {
  owner: Owner;
  /** Hex sha256 of the bytes. */
  sha256: string;
  /** Epoch milliseconds. */
  created_ts: number;
}
