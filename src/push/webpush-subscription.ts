/**
 * The grammar of a Web Push subscription (`webpush` in `hello` and `fcm.register`,
 * docs/PROTOCOL.md §16). It is checked where it enters, so a device cannot store megabytes or a
 * target the gateway would post to over plain HTTP; the Web Push sender checks it again before
 * it posts, because the endpoint is a URL the gateway's server calls.
 * @module
 */
import type { WebPushSubscription } from "../contracts/records.js";
import { GatewayError } from "../protocol/errors.js";

/** The longest `endpoint` taken, in characters. Real ones are 150 to 500. */
export const WEBPUSH_ENDPOINT_MAX = 2048;

/** Unpadded base64url, as `PushSubscription.toJSON()` gives the keys; padding is tolerated. */
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

/** The bytes of a base64url key, or undefined when it is not one of `bytes` bytes. */
function keyBytes(value: unknown, bytes: number): Uint8Array | undefined {
  // 4 characters per 3 bytes, so anything longer than this cannot decode to `bytes` bytes.
  if (typeof value !== "string" || value.length > Math.ceil(bytes / 3) * 4 || !BASE64URL.test(value)) return undefined;
  const decoded = Buffer.from(value, "base64url");
  return decoded.length === bytes ? decoded : undefined;
}

/** Why `value` is not an https endpoint of at most {@link WEBPUSH_ENDPOINT_MAX} characters, or undefined. */
function endpointProblem(value: unknown): string | undefined {
  const use = `use an https: URL of at most ${WEBPUSH_ENDPOINT_MAX} characters`;
  if (typeof value !== "string" || value.length === 0 || value.length > WEBPUSH_ENDPOINT_MAX) return use;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return use;
  }
  if (url.protocol !== "https:") return `${use} (push services take https only)`;
  if (url.username !== "" || url.password !== "" || url.hash !== "") return `${use}, without credentials or a fragment`;
  return undefined;
}

/**
 * The error for a `webpush` field of `hello` or `fcm.register` (`unsupported` naming the field),
 * or undefined when it is absent, `null` (clears the subscription) or a valid subscription.
 */
export function webPushSubscriptionError(frameType: string, value: unknown): GatewayError | undefined {
  if (value === undefined || value === null) return undefined;
  const field = (name: string, hint: string) =>
    new GatewayError("unsupported", `${frameType}: field "webpush${name}": ${hint}`);
  if (typeof value !== "object" || Array.isArray(value))
    return field("", "send the browser's subscription {endpoint, keys: {p256dh, auth}}, or null to clear it");
  const { endpoint, keys } = value as { endpoint?: unknown; keys?: unknown };
  const problem = endpointProblem(endpoint);
  if (problem !== undefined) return field(".endpoint", problem);
  if (typeof keys !== "object" || keys === null || Array.isArray(keys))
    return field(".keys", "send {p256dh, auth}, both base64url");
  const { p256dh, auth } = keys as { p256dh?: unknown; auth?: unknown };
  if (keyBytes(p256dh, 65)?.[0] !== 4)
    return field(".keys.p256dh", "use the base64url of an uncompressed P-256 point (65 bytes)");
  if (keyBytes(auth, 16) === undefined) return field(".keys.auth", "use the base64url of 16 bytes");
  return undefined;
}

/** True for a subscription `webPushSubscriptionError` takes (`null` aside). */
export function isWebPushSubscription(value: unknown): value is WebPushSubscription {
  return value !== null && value !== undefined && webPushSubscriptionError("webpush", value) === undefined;
}

/**
 * The subscription as stored: its endpoint and keys only, so fields a browser adds
 * (`expirationTime`) or a device invents never reach storage. `null` clears; undefined keeps.
 */
export function storedSubscription(value: unknown): WebPushSubscription | null | undefined {
  if (value === undefined || value === null) return value;
  const { endpoint, keys } = value as WebPushSubscription;
  return { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } };
}
