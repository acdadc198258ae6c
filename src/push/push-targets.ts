/**
 * The grammar of the push targets a device registers (`ntfy_topic`, `fcm_token` in `hello` and
 * `fcm.register`; docs/PROTOCOL.md §6). They are checked where they enter, and
 * push senders check them again before building a request, because a target ends up in a URL or a
 * request body sent with the operator's credentials.
 * @module
 */
import type { WebPushSubscription } from "../contracts/records.js";
import { GatewayError } from "../protocol/errors.js";
import { storedSubscription, webPushSubscriptionError } from "./webpush-subscription.js";

/**
 * An ntfy topic: 1 to 64 letters, digits, `_` or `-`, as ntfy itself allows. Nothing that could
 * leave the URL path segment (`/`, `.`, `%`).
 */
export const NTFY_TOPIC_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * An FCM registration token: 1 to 4096 printable ASCII characters without spaces. Real tokens are
 * about 160 characters of letters, digits, `_`, `-` and `:`; the grammar is wider so that a token
 * format change does not lock devices out, and bounded so that a device cannot store megabytes.
 */
export const FCM_TOKEN_PATTERN = /^[\x21-\x7e]{1,4096}$/;

/** True for a topic of {@link NTFY_TOPIC_PATTERN}. */
export function isNtfyTopic(value: unknown): value is string {
  return typeof value === "string" && NTFY_TOPIC_PATTERN.test(value);
}

/** True for a token of {@link FCM_TOKEN_PATTERN}. */
export function isFcmToken(value: unknown): value is string {
  return typeof value === "string" && FCM_TOKEN_PATTERN.test(value);
}

/**
 * The error for the push targets of a `hello` or `fcm.register` payload (`unsupported` naming the
 * field), or undefined when they are valid. An empty string is valid: it clears the target.
 */
export function pushTargetError(
  frameType: string,
  payload: { fcm_token?: string; ntfy_topic?: string; webpush?: unknown },
): GatewayError | undefined {
  const { ntfy_topic, fcm_token } = payload;
  if (ntfy_topic !== undefined && ntfy_topic !== "" && !isNtfyTopic(ntfy_topic)) {
    return new GatewayError("unsupported", `${frameType}: field "ntfy_topic": use 1 to 64 letters, digits, "_" or "-"`);
  }
  if (fcm_token !== undefined && fcm_token !== "" && !isFcmToken(fcm_token)) {
    return new GatewayError(
      "unsupported",
      `${frameType}: field "fcm_token": use 1 to 4096 printable ASCII characters without spaces`,
    );
  }
  return webPushSubscriptionError(frameType, payload.webpush);
}

/** The Web Push subscription a device keeps after a frame: the one it gave, none for `null`, else the stored one. */
export function nextSubscription(
  given: unknown,
  stored: WebPushSubscription | undefined,
): WebPushSubscription | undefined {
  const next = storedSubscription(given);
  return next === undefined ? stored : (next ?? undefined);
}

/** The push channels of the protocol (docs/PROTOCOL.md §2.3), declared by devices whatever senders this gateway has. */
const PROTOCOL_PUSH_CHANNELS: ReadonlySet<string> = new Set(["none", "ntfy", "fcm", "webpush"]);

/**
 * The error for a `hello.caps.push` that names no push channel (`unsupported` naming the field),
 * or undefined: `"none"`, `"ntfy"`, `"fcm"`, `"webpush"` and the `name` of every push sender this gateway was
 * given are accepted. A typo would otherwise leave the device silently never pushed.
 */
export function pushCapsError(
  declared: string,
  senders: ReadonlyArray<{ readonly name: string }>,
): GatewayError | undefined {
  if (PROTOCOL_PUSH_CHANNELS.has(declared) || senders.some((sender) => sender.name === declared)) return undefined;
  const known = [...new Set([...PROTOCOL_PUSH_CHANNELS, ...senders.map((sender) => sender.name)])]
    .map((name) => JSON.stringify(name))
    .join(", ");
  const shown = JSON.stringify(declared.length > 64 ? `${declared.slice(0, 64)}…` : declared);
  return new GatewayError(
    "unsupported",
    `hello: field "caps.push": ${shown} is not a push channel of this gateway; use one of ${known}`,
  );
}
