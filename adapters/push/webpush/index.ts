/**
 * A {@link PushSender} for Web Push (RFC 8030): browsers, and the installable web UI on a phone.
 * The payload is encrypted for the browser (RFC 8291, `aes128gcm`) and the request signed with
 * the server's VAPID key pair (RFC 8292), both by the `web-push` package. A device opts in with
 * `caps.push: "webpush"` and its `PushSubscription` as `webpush` in `hello` or `fcm.register`
 * (docs/PROTOCOL.md §16).
 *
 * ```ts
 * import { fileVapidKeys, webPushSender } from "chat-gateway/push/webpush";
 * const vapid = await fileVapidKeys("./data/vapid.json"); // made once, mode 0600
 * const push = webPushSender({ vapid, subject: "mailto:admin@example.com" });
 * // Serve vapid.publicKey to the browser (GET /api/push/vapid) for `pushManager.subscribe`.
 * ```
 * @module
 */
import { Agent } from "node:https";
import type { LookupFunction } from "node:net";
import webPush from "web-push";
import { isWebPushSubscription, PushSendError } from "chat-gateway";
import type { Device, Owner, PushMessage, PushSender, WebPushSubscription } from "chat-gateway";
import {
  boundedRequest,
  errorText,
  inFlightLimits,
  isPermanentStatus,
  type PushAnswer,
  pushGate,
  truncateUtf8,
} from "../http-push.js";
import { isVapidKeys, type VapidKeys } from "./vapid.js";
import { INTERNAL_ADDRESS, isPublicEndpoint, publicOnlyLookup } from "./public-lookup.js";

export { isPublicEndpoint } from "./public-lookup.js";

export { fileVapidKeys, generateVapidKeys, isVapidKeys } from "./vapid.js";
export type { VapidKeys } from "./vapid.js";

/** How soon a push service should deliver (the `Urgency` header of RFC 8030); a phone may wake up only for `high`. */
export type WebPushUrgency = "very-low" | "low" | "normal" | "high";

/** Options of {@link webPushSender}. */
export interface WebPushSenderOptions {
  /** The server's VAPID key pair ({@link fileVapidKeys}, or one kept elsewhere). */
  vapid: VapidKeys;
  /**
   * Who runs this server, for the push service's operator (RFC 8292 `sub`): a `mailto:` address
   * or an `https:` URL.
   */
  subject: string;
  /** How long a push service keeps a push for a browser that is offline, seconds. Default 86,400 (a day). */
  ttlSeconds?: number;
  /** The urgency of a push. Default `high` for `approval` and `clarify` asks, which hold up a turn; `normal` otherwise. */
  urgency?: (message: PushMessage) => WebPushUrgency;
  /**
   * Whether the server may post to this endpoint. Default: anything but `localhost` and IP
   * literals of loopback, private, link-local, shared or multicast ranges, so that a device cannot
   * make the server post into its own network. A test with a local push service allows it here.
   */
  endpointAllowed?: (url: URL) => boolean;
  /**
   * The `https.Agent` of the requests (to trust a private CA, or to keep connections alive).
   * Default: one whose names resolve through {@link WebPushSenderOptions.lookup} and never to an
   * internal address. An agent of your own resolves as it is made to.
   */
  agent?: Agent;
  /** How the default agent resolves an endpoint's host name. Default: Node's `dns.lookup`. */
  lookup?: LookupFunction;
  /**
   * How long one request may take in all (connecting, the answer's headers and body),
   * milliseconds. Default 10,000. At most 16 KiB of an answer is read.
   */
  timeoutMs?: number;
  /** Pushes in flight to one endpoint; one more fails at once and is retried later. Default 2. */
  maxInFlightPerTarget?: number;
  /** Pushes in flight through this sender; one more fails at once and is retried later. Default 64. */
  maxInFlight?: number;
}

/**
 * What the service worker receives (`event.data.json()`): the push message's fields, its text cut
 * so that the encrypted record stays within the 4,096 bytes push services take.
 */
export interface WebPushPayload {
  kind: PushMessage["kind"];
  title: string;
  body: string;
  chat_id?: string;
  thread_id?: string | null;
  message_id?: string;
  notification_kind?: string;
  picker_id?: string;
  /** The declarative notification of RFC 8030 (`web_push: 8030`): a browser shows it even when no service worker runs. */
  web_push: 8030;
  notification: { title: string; body: string; navigate: string; tag?: string };
  /** An ask's buttons (docs/PROTOCOL.md §21): the service worker posts `{token}` to each one's URL path. */
  actions?: Array<{ option_id: string; title: string; token: string; url: string }>;
  /** A clearing push: it replaces the notification of its tag, silently ("Approved on Pixel"). */
  clear?: true;
}

const MAX_TITLE_BYTES = 200;
const MAX_BODY_BYTES = 2000;
/**
 * The most plaintext one push carries: a push service takes 4,096 bytes of record, and
 * `aes128gcm` adds 86 bytes of header, 16 of tag and 1 of padding delimiter.
 */
const MAX_PAYLOAD_BYTES = 3993;

/**
 * Create a {@link PushSender} named `"webpush"`. It accepts every device with a `webpush`
 * subscription. A push service answering 404 or 410 (the subscription expired or was
 * unsubscribed) rejects with a `gone` {@link PushSendError}, and the gateway drops the
 * subscription from the device ({@link PushSender.forget}); other 4xx but 429 are permanent.
 */
export function webPushSender(options: WebPushSenderOptions): PushSender {
  const { vapid, subject } = checkOptions(options);
  // Endpoints come from devices: by default a name that resolves inward is refused like an address.
  const agent = options.agent ?? new Agent({ lookup: publicOnlyLookup(options.lookup) });
  const ttl = options.ttlSeconds ?? 86_400;
  const urgency = options.urgency ?? defaultUrgency;
  const allowed = options.endpointAllowed ?? isPublicEndpoint;
  const timeout = options.timeoutMs ?? 10_000;
  const gate = pushGate("webpush", inFlightLimits("webPushSender", options));
  return {
    name: "webpush",

    accepts(device: Device): boolean {
      return device.webpush !== undefined;
    },

    async send(_owner: Owner, device: Device, message: PushMessage): Promise<void> {
      const subscription = usableSubscription(device, allowed);
      // The endpoint is a capability URL, like an ntfy topic: logs get its origin only.
      const where = `${new URL(subscription.endpoint).origin} for device ${device.device_id}`;
      const request = webPush.generateRequestDetails(subscription, fittedPayload(message), {
        vapidDetails: { subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
        TTL: ttl,
        urgency: checkUrgency(urgency(message)),
        contentEncoding: "aes128gcm",
      });
      // Sent here, not by `web-push`, which reads an answer without a size or a total time bound.
      const send = () =>
        boundedRequest(new URL(request.endpoint), { headers: request.headers, body: request.body, agent }, timeout);
      let answer: PushAnswer;
      try {
        answer = await gate(subscription.endpoint, send);
      } catch (cause) {
        throw failure(cause, where);
      }
      if (!answer.ok) throw refusal(answer, where);
    },

    forget(stored: Device, pushed: Device): Device | undefined {
      if (stored.webpush === undefined || stored.webpush.endpoint !== pushed.webpush?.endpoint) return undefined;
      const { webpush: _gone, ...rest } = stored;
      return rest;
    },
  };
}

function checkOptions(options: WebPushSenderOptions): { vapid: VapidKeys; subject: string; agent?: Agent } {
  if (!isVapidKeys(options?.vapid)) {
    throw new TypeError(
      "webPushSender: `vapid` must be {publicKey, privateKey}: base64url of a P-256 point (65 bytes) and scalar (32 bytes)",
    );
  }
  const subject = options.subject;
  if (typeof subject !== "string" || !/^(mailto:\S+@\S+|https:\/\/\S+)$/.test(subject)) {
    throw new TypeError("webPushSender: `subject` must be a mailto: address or an https: URL (RFC 8292)");
  }
  for (const [name, least] of [
    ["ttlSeconds", 0],
    ["timeoutMs", 1],
  ] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value < least))
      throw new TypeError(`webPushSender: \`${name}\` must be a whole number >= ${least}`);
  }
  for (const name of ["urgency", "endpointAllowed", "lookup"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function")
      throw new TypeError(`webPushSender: \`${name}\` must be a function`);
  }
  return { vapid: options.vapid, subject, ...(options.agent ? { agent: options.agent } : {}) };
}

/** The device's subscription, checked again: it was stored by this gateway, or by other code. */
function usableSubscription(device: Device, allowed: (url: URL) => boolean): WebPushSubscription {
  const subscription = device.webpush;
  if (!isWebPushSubscription(subscription)) {
    throw new PushSendError(`webpush: device ${device.device_id} has no valid subscription`, { permanent: true });
  }
  if (!allowed(new URL(subscription.endpoint))) {
    throw new PushSendError(
      `webpush: device ${device.device_id} has an endpoint this server does not post to (${new URL(subscription.endpoint).host})`,
      { permanent: true },
    );
  }
  return subscription;
}

/** The payload's JSON, its body cut until the whole fits in one push (buttons and ids are never cut). */
function fittedPayload(message: PushMessage): string {
  let bodyBytes = MAX_BODY_BYTES / 2;
  for (;;) {
    const json = JSON.stringify(payloadOf(message, bodyBytes));
    if (Buffer.byteLength(json) <= MAX_PAYLOAD_BYTES || bodyBytes === 0) return json;
    bodyBytes = Math.floor(bodyBytes / 2);
  }
}

function payloadOf(message: PushMessage, bodyBytes: number): WebPushPayload {
  const title = truncateUtf8(message.title, MAX_TITLE_BYTES);
  // The text goes twice (the worker's fields and the declarative ones), so each copy gets half.
  const body = truncateUtf8(message.body, bodyBytes);
  const payload: WebPushPayload = { kind: message.kind, title, body, ...declarative(message, title, body) };
  if (message.chat_id !== undefined) payload.chat_id = message.chat_id;
  if (message.thread_id !== undefined) payload.thread_id = message.thread_id;
  if (message.message_id !== undefined) payload.message_id = message.message_id;
  if (message.notification_kind !== undefined) payload.notification_kind = message.notification_kind;
  if (message.picker_id !== undefined) payload.picker_id = message.picker_id;
  if (message.clear) payload.clear = true;
  else if (message.actions?.length)
    payload.actions = message.actions.map(({ option_id, title, token, url }) => ({ option_id, title, token, url }));
  return payload;
}

/** The RFC 8030 declarative fields: the same text, the lane to open, one tag per message or ask. */
function declarative(
  message: PushMessage,
  title: string,
  body: string,
): Pick<WebPushPayload, "web_push" | "notification"> {
  const notification: WebPushPayload["notification"] = { title, body, navigate: message.url ?? "/" };
  const tag = message.message_id ?? message.picker_id;
  if (tag !== undefined) notification.tag = tag;
  return { web_push: 8030, notification };
}

function defaultUrgency(message: PushMessage): WebPushUrgency {
  const kind = message.notification_kind;
  return message.kind === "notification" && (kind === "approval" || kind === "clarify") ? "high" : "normal";
}

function checkUrgency(value: unknown): WebPushUrgency {
  if (value === "very-low" || value === "low" || value === "normal" || value === "high") return value;
  throw new PushSendError(`webpush: \`urgency\` returned ${String(value)}; expected very-low, low, normal or high`, {
    permanent: true,
  });
}

/** A push service's refusal: 404 and 410 mean the subscription is gone. */
function refusal(answer: PushAnswer, where: string): PushSendError {
  const { status, text } = answer;
  const gone = status === 404 || status === 410;
  const body = text !== "" ? `: ${text.slice(0, 200)}` : "";
  return new PushSendError(`webpush: POST to ${where} answered ${status}${gone ? " (subscription gone)" : ""}${body}`, {
    permanent: isPermanentStatus(status),
    gone,
  });
}

/** A request that got no answer: permanent when the name resolved inward. */
function failure(cause: unknown, where: string): PushSendError {
  if (cause instanceof PushSendError) return cause;
  const internal = (cause as { code?: unknown }).code === INTERNAL_ADDRESS;
  return new PushSendError(`webpush: POST to ${where} failed: ${errorText(cause)}`, { permanent: internal, cause });
}
