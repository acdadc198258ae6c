/**
 * A {@link PushSender} for [ntfy](https://ntfy.sh): one HTTP POST per push to a topic on an ntfy
 * server (ntfy.sh or your own). A device opts in by sending `ntfy_topic` in `hello` or
 * `fcm.register`.
 *
 * ```ts
 * import { ntfyPushSender } from "chat-gateway/push/ntfy";
 * const push = ntfyPushSender({
 *   baseUrl: "https://ntfy.example.com",
 *   token: process.env.NTFY_TOKEN,
 *   clickUrl: (msg) => msg.chat_id && `https://chat.example.com/c/${msg.chat_id}`,
 * });
 * ```
 * @module
 */
import { isNtfyTopic, PushSendError } from "chat-gateway";
import type { Device, Owner, PushMessage, PushSender } from "chat-gateway";
import {
  boundedFetch,
  errorText,
  inFlightLimits,
  isPermanentStatus,
  type PushAnswer,
  pushGate,
  truncateUtf8,
} from "../http-push.js";

/** A priority as ntfy understands it: 1 min, 2 low, 3 default, 4 high, 5 max (urgent). */
export type NtfyPriority = 1 | 2 | 3 | 4 | 5;

/** Options of {@link ntfyPushSender}. */
export interface NtfyPushSenderOptions {
  /** The ntfy server, optionally with a path prefix. Default `"https://ntfy.sh"`. */
  baseUrl?: string;
  /** An ntfy access token (`tk_…`), sent as `Authorization: Bearer`. Default: no authorization. */
  token?: string;
  /** The URL opened when the notification is tapped (`Click` header). Default: none. */
  clickUrl?: (message: PushMessage) => string | undefined;
  /**
   * The priority of a push. Default: 4 (high) for `approval` and `clarify` notifications, which
   * hold up a turn until the user answers; 3 for everything else.
   */
  priority?: (message: PushMessage) => NtfyPriority;
  /** Tags (`Tags` header); names of emoji shortcodes show as emoji. Default: none. */
  tags?: (message: PushMessage) => string[] | undefined;
  /**
   * How long one request may take in all (connecting, the answer's headers and body),
   * milliseconds. Default 10 000. At most 16 KiB of an answer is read.
   */
  timeoutMs?: number;
  /** Pushes in flight to one topic; one more fails at once and is retried later. Default 2. */
  maxInFlightPerTarget?: number;
  /** Pushes in flight through this sender; one more fails at once and is retried later. Default 64. */
  maxInFlight?: number;
  /** The `fetch` to use. Default: the global `fetch`. */
  fetch?: typeof globalThis.fetch;
}

/** ntfy turns a longer body into an attachment, which a phone shows as a file instead of text. */
const MAX_BODY_BYTES = 4096;

/**
 * Create a {@link PushSender} that posts to ntfy. It accepts every device with an `ntfy_topic`.
 *
 * Failures reject with a {@link PushSendError}; a 4xx answer other than 429 is permanent.
 *
 * @example
 * ```ts
 * const push = ntfyPushSender({ token: "tk_…" });
 * if (push.accepts(device)) {
 *   await push.send(owner, device, { kind: "notification", title: "Backup done", body: "All 3 volumes" });
 * }
 * ```
 */
export function ntfyPushSender(options: NtfyPushSenderOptions = {}): PushSender {
  const baseUrl = parseBaseUrl(options.baseUrl ?? "https://ntfy.sh");
  const { token, clickUrl, priority = defaultPriority, tags } = options;
  if (token !== undefined && (typeof token !== "string" || token === "" || /[^\x21-\x7e]/.test(token))) {
    throw new TypeError(
      "ntfyPushSender: `token` must be a non-empty ASCII string without spaces (an ntfy access token)",
    );
  }
  for (const [name, value] of [
    ["clickUrl", clickUrl],
    ["priority", options.priority],
    ["tags", tags],
  ] as const) {
    if (value !== undefined && typeof value !== "function") {
      throw new TypeError(`ntfyPushSender: \`${name}\` must be a function of the push message`);
    }
  }
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new TypeError("ntfyPushSender: `timeoutMs` must be a positive number of milliseconds");
  }
  const fetchFn = options.fetch ?? globalThis.fetch;
  if (typeof fetchFn !== "function") {
    throw new TypeError("ntfyPushSender: no `fetch` available; pass one in the options");
  }
  const gate = pushGate("ntfy", inFlightLimits("ntfyPushSender", options));

  return {
    name: "ntfy",

    accepts(device: Device): boolean {
      return typeof device.ntfy_topic === "string" && device.ntfy_topic !== "";
    },

    async send(_owner: Owner, device: Device, message: PushMessage): Promise<void> {
      const topic = device.ntfy_topic;
      if (!topic) {
        throw new PushSendError(`ntfy: device ${device.device_id} has no ntfy_topic`, { permanent: true });
      }
      // The gateway refuses such topics where they enter; a device stored before that, or by
      // other code, must still never steer a request carrying the token to another path.
      if (!isNtfyTopic(topic)) {
        throw new PushSendError(
          `ntfy: device ${device.device_id} has an invalid ntfy_topic (use 1 to 64 letters, digits, "_" or "-")`,
          { permanent: true },
        );
      }
      const headers: Record<string, string> = { Priority: String(checkPriority(priority(message))) };
      const title = encodeHeaderText(message.title);
      if (title !== "") headers.Title = title;
      const click = clickUrl?.(message);
      if (click !== undefined && click !== "") headers.Click = checkUrl(click);
      const tagList = tags?.(message)?.filter((t) => t !== "");
      if (tagList && tagList.length > 0) headers.Tags = encodeHeaderText(tagList.join(","));
      if (token !== undefined) headers.Authorization = `Bearer ${token}`;
      const request = ntfyRequest(`${baseUrl}/${encodeURIComponent(topic)}`, headers, message);
      // On ntfy the topic is the secret, so error messages, which end up in logs, leave it out.
      const where = `${baseUrl} for device ${device.device_id}`;
      const post = () => boundedFetch(fetchFn, request.url, request.init, timeoutMs);
      let answer: PushAnswer;
      try {
        answer = await gate(topic, post);
      } catch (cause) {
        if (cause instanceof PushSendError) throw cause;
        throw new PushSendError(`ntfy: ${request.init.method} to ${where} failed: ${errorText(cause)}`, {
          permanent: false,
          cause,
        });
      }
      if (answer.ok) return;
      throw new PushSendError(
        `ntfy: ${request.init.method} to ${where} answered ${answer.status}${detail(answer.text)}`,
        {
          permanent: isPermanentStatus(answer.status),
        },
      );
    },
  };
}

/** ntfy sequence ids: what a tag may be to be cleared later (ntfy 2.16 or later). */
const SEQUENCE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The request of a push (docs/PROTOCOL.md §21): a publish carries its tag (the ask or message id)
 * as `X-Sequence-ID`; a clearing push is `PUT <topic>/<sequence id>/clear`, with no text.
 */
function ntfyRequest(
  topicUrl: string,
  headers: Record<string, string>,
  message: PushMessage,
): { url: string; init: RequestInit } {
  const tag = message.picker_id ?? message.message_id;
  const sequence = tag !== undefined && SEQUENCE_ID.test(tag) ? tag : undefined;
  if (message.clear && sequence !== undefined) {
    const auth: Record<string, string> = headers.Authorization ? { Authorization: headers.Authorization } : {};
    return { url: `${topicUrl}/${sequence}/clear`, init: { method: "PUT", headers: auth } };
  }
  if (sequence !== undefined) headers["X-Sequence-ID"] = sequence;
  const actions = ntfyActions(message);
  if (actions !== undefined) headers.Actions = actions;
  return { url: topicUrl, init: { method: "POST", headers, body: truncateUtf8(message.body, MAX_BODY_BYTES) } };
}

/**
 * An ask's buttons as ntfy `http` actions (docs/PROTOCOL.md §21), in the JSON form of the
 * `Actions` header: each posts `{"token": …}` to its absolute URL (a relative one cannot be
 * reached from the phone, so then there are none). Non-ASCII is escaped to stay a Latin-1 header.
 */
function ntfyActions(message: PushMessage): string | undefined {
  const usable = (message.actions ?? []).filter((a) => /^https?:\/\//.test(a.url)).slice(0, 3);
  if (usable.length === 0) return undefined;
  const json = JSON.stringify(
    usable.map((a) => ({
      action: "http",
      label: a.title.slice(0, 64),
      url: a.url,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: a.token }),
      clear: true,
    })),
  );
  return json.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function defaultPriority(message: PushMessage): NtfyPriority {
  const kind = message.notification_kind;
  return message.kind === "notification" && (kind === "approval" || kind === "clarify") ? 4 : 3;
}

function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`ntfyPushSender: \`baseUrl\` is not a URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`ntfyPushSender: \`baseUrl\` must be http or https, got ${url.protocol}`);
  }
  if (url.search || url.hash) {
    throw new TypeError("ntfyPushSender: `baseUrl` must not have a query or a fragment");
  }
  return url.href.replace(/\/+$/, "");
}

function checkPriority(value: unknown): NtfyPriority {
  if (value === 1 || value === 2 || value === 3 || value === 4 || value === 5) return value;
  throw new PushSendError(`ntfy: \`priority\` returned ${String(value)}; expected an integer from 1 to 5`, {
    permanent: true,
  });
}

function checkUrl(value: string): string {
  try {
    // `href` percent-encodes non-ASCII, which a Latin-1 header could not carry.
    return new URL(value).href;
  } catch {
    throw new PushSendError(`ntfy: \`clickUrl\` returned an invalid URL: ${JSON.stringify(value)}`, {
      permanent: true,
    });
  }
}

/** Bytes of UTF-8 per RFC 2047 word: 45 bytes are 60 base64 characters, so a word stays within 75. */
const WORD_BYTES = 45;

/**
 * Header values travel as Latin-1, so anything beyond printable ASCII goes as RFC 2047 encoded
 * words, which ntfy decodes. Text that merely looks like an encoded word is encoded too, or ntfy
 * would decode it.
 */
function encodeHeaderText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it strips
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  if (!/[^\x20-\x7e]|=\?/.test(clean)) return clean;
  const words: string[] = [];
  let chunk: Buffer[] = [];
  let size = 0;
  for (const char of clean) {
    const bytes = Buffer.from(char, "utf8");
    if (size + bytes.length > WORD_BYTES) {
      words.push(encodedWord(Buffer.concat(chunk)));
      chunk = [];
      size = 0;
    }
    chunk.push(bytes);
    size += bytes.length;
  }
  if (size > 0) words.push(encodedWord(Buffer.concat(chunk)));
  return words.join(" ");
}

function encodedWord(bytes: Buffer): string {
  return `=?UTF-8?B?${bytes.toString("base64")}?=`;
}

function detail(body: string): string {
  if (!body) return "";
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === "string") return `: ${parsed.error}`;
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return `: ${body.slice(0, 200)}`;
}
