/**
 * A {@link PushSender} for Firebase Cloud Messaging through the HTTP v1 API, authenticated with a
 * Google service account. A device opts in by sending `fcm_token` in `hello` or `fcm.register`.
 * Needs the optional peer dependency `jose`.
 *
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { fcmPushSender } from "chat-gateway/push/fcm";
 * const push = fcmPushSender({
 *   serviceAccount: JSON.parse(readFileSync("service-account.json", "utf8")),
 * });
 * ```
 * @module
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import { SignJWT } from "jose";
import { isFcmToken, PushSendError } from "chat-gateway";
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

/** The fields of a Google service-account key file that the sender needs. */
export interface FcmServiceAccount {
  /** The Firebase project that owns the app. */
  project_id: string;
  /** The service account's e-mail; the issuer of the signed JWT. */
  client_email: string;
  /** The PKCS#8 PEM private key of the service account (RSA). */
  private_key: string;
  /** The OAuth token endpoint. Default `"https://oauth2.googleapis.com/token"`. */
  token_uri?: string;
}

/** Options of {@link fcmPushSender}. */
export interface FcmPushSenderOptions {
  /** The service account, as read from its JSON key file. */
  serviceAccount: FcmServiceAccount;
  /** The OAuth token endpoint. Default: `serviceAccount.token_uri`, else Google's. */
  tokenUrl?: string;
  /** The FCM API origin. Default `"https://fcm.googleapis.com"`. */
  apiBaseUrl?: string;
  /**
   * How long one request may take in all (connecting, the answer's headers and body),
   * milliseconds. Default 10 000. At most 16 KiB of an answer is read.
   */
  timeoutMs?: number;
  /** Pushes in flight to one device token; one more fails at once and is retried later. Default 2. */
  maxInFlightPerTarget?: number;
  /** Pushes in flight through this sender; one more fails at once and is retried later. Default 64. */
  maxInFlight?: number;
  /** The `fetch` to use. Default: the global `fetch`. */
  fetch?: typeof globalThis.fetch;
  /** The current time, epoch milliseconds; drives JWT times and token expiry. Default `Date.now`. */
  clock?: () => number;
}

/** Google project ids, including the legacy domain-scoped `example.com:project` form. */
const PROJECT_ID = /^[A-Za-z0-9._:-]{1,100}$/;
const SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";
/** Google's assertion lifetime maximum. */
const JWT_LIFETIME_S = 3600;
/** A cached token is replaced this long before it expires, so that no send races its expiry. */
const EXPIRY_MARGIN_MS = 60_000;
/** FCM rejects a message whose payload passes 4096 bytes; the body is the part that can be long. */
const MAX_BODY_BYTES = 2048;

interface AccessToken {
  value: string;
  /** Epoch milliseconds after which it is not used any more. */
  refreshAt: number;
}

/** The options of {@link fcmPushSender}, checked, with the URLs they lead to. */
function checkedOptions(options: FcmPushSenderOptions) {
  if (options === null || typeof options !== "object") {
    throw new TypeError("fcmPushSender: options with a `serviceAccount` are required");
  }
  const account = options.serviceAccount;
  if (account === null || typeof account !== "object") {
    throw new TypeError("fcmPushSender: `serviceAccount` is required (the parsed JSON key file of a service account)");
  }
  for (const field of ["project_id", "client_email", "private_key"] as const) {
    if (typeof account[field] !== "string" || account[field] === "") {
      throw new TypeError(`fcmPushSender: \`serviceAccount.${field}\` must be a non-empty string`);
    }
  }
  // The project id becomes a path segment of every send: nothing that could leave it.
  if (!PROJECT_ID.test(account.project_id) || /^\.+$/.test(account.project_id)) {
    throw new TypeError(
      'fcmPushSender: `serviceAccount.project_id` must be letters, digits, "-", "_", "." or ":" (at most 100), as in the key file',
    );
  }
  const key = parsePrivateKey(account.private_key);
  const tokenUrl = parseUrl("tokenUrl", options.tokenUrl ?? account.token_uri ?? GOOGLE_TOKEN_URL);
  const apiBaseUrl = parseUrl("apiBaseUrl", options.apiBaseUrl ?? "https://fcm.googleapis.com").replace(/\/+$/, "");
  const sendUrl = `${apiBaseUrl}/v1/projects/${encodeURIComponent(account.project_id)}/messages:send`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new TypeError("fcmPushSender: `timeoutMs` must be a positive number of milliseconds");
  }
  const fetchFn = options.fetch ?? globalThis.fetch;
  if (typeof fetchFn !== "function") {
    throw new TypeError("fcmPushSender: no `fetch` available; pass one in the options");
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== "function") {
    throw new TypeError("fcmPushSender: `clock` must be a function returning epoch milliseconds");
  }
  const limits = inFlightLimits("fcmPushSender", options);
  return { account, key, tokenUrl, sendUrl, timeoutMs, fetchFn, clock, limits };
}

/** The access token an OAuth answer carries, refreshed a margin before it expires. */
function accessTokenOf(response: PushAnswer, now: number): AccessToken {
  const text = response.text;
  if (!response.ok) {
    throw new PushSendError(`fcm: the OAuth token request answered ${response.status}${oauthDetail(text)}`, {
      permanent: isPermanentStatus(response.status),
    });
  }
  let body: { access_token?: unknown; expires_in?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch (cause) {
    throw new PushSendError("fcm: the OAuth token response is not JSON", { permanent: false, cause });
  }
  if (typeof body.access_token !== "string" || body.access_token === "") {
    throw new PushSendError("fcm: the OAuth token response has no access_token", { permanent: false });
  }
  const lifetimeMs = (typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 3600) * 1000;
  return { value: body.access_token, refreshAt: now + lifetimeMs - Math.min(EXPIRY_MARGIN_MS, lifetimeMs / 2) };
}

/** Why a send failed, permanent when the device token is gone or FCM refused the request itself. */
function sendError(device: Device, status: number, text: string): PushSendError {
  const error = fcmError(text);
  const unregistered = status === 404 || error.code === "UNREGISTERED";
  return new PushSendError(
    `fcm: send to device ${device.device_id} answered ${status}` +
      (error.code ? ` ${error.code}` : "") +
      (error.message ? `: ${error.message}` : "") +
      (unregistered ? " (the device's FCM token is no longer valid)" : ""),
    { permanent: unregistered || isPermanentStatus(status) },
  );
}

/** The device's FCM token, refused for good when it is missing or malformed. */
function deviceToken(device: Device): string {
  if (!device.fcm_token) {
    throw new PushSendError(`fcm: device ${device.device_id} has no fcm_token`, { permanent: true });
  }
  if (!isFcmToken(device.fcm_token)) {
    throw new PushSendError(
      `fcm: device ${device.device_id} has an invalid fcm_token (1 to 4096 printable ASCII characters without spaces)`,
      { permanent: true },
    );
  }
  return device.fcm_token;
}

/** The service-account JWT that is exchanged for an access token. */
function signedAssertion(
  clientEmail: string,
  tokenUrl: string,
  key: Parameters<SignJWT["sign"]>[0],
  iat: number,
): Promise<string> {
  return new SignJWT({ scope: SCOPE })
    .setProtectedHeader({ alg: "RS256", typ: "JWT" })
    .setIssuer(clientEmail)
    .setAudience(tokenUrl)
    .setIssuedAt(iat)
    .setExpirationTime(iat + JWT_LIFETIME_S)
    .sign(key);
}

/**
 * Create a {@link PushSender} for FCM HTTP v1. It accepts every device with an `fcm_token`.
 *
 * It signs a service-account JWT, exchanges it for an OAuth access token, and reuses that token
 * until shortly before it expires; concurrent sends share one token request. A 401 from FCM
 * refreshes the token and retries once. An unregistered device token (404, `UNREGISTERED`) and
 * other 4xx answers except 429 reject with a permanent {@link PushSendError}.
 *
 * @example
 * ```ts
 * const push = fcmPushSender({ serviceAccount });
 * if (push.accepts(device)) {
 *   await push.send(owner, device, { kind: "message", title: "Assistant", body: "Done.", chat_id });
 * }
 * ```
 */
export function fcmPushSender(options: FcmPushSenderOptions): PushSender {
  const { account, key, tokenUrl, sendUrl, timeoutMs, fetchFn, clock, limits } = checkedOptions(options);
  const gate = pushGate("fcm", limits);

  let cached: AccessToken | undefined;
  let pending: Promise<AccessToken> | undefined;

  async function request(url: string, init: RequestInit): Promise<PushAnswer> {
    try {
      return await boundedFetch(fetchFn, url, init, timeoutMs);
    } catch (cause) {
      throw new PushSendError(`fcm: POST ${url} failed: ${errorText(cause)}`, { permanent: false, cause });
    }
  }

  async function fetchToken(): Promise<AccessToken> {
    const now = clock();
    const iat = Math.floor(now / 1000);
    const assertion = await signedAssertion(account.client_email, tokenUrl, key, iat);
    const response = await request(tokenUrl, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString(),
    });
    return accessTokenOf(response, now);
  }

  function accessToken(): Promise<AccessToken> {
    if (cached && clock() < cached.refreshAt) return Promise.resolve(cached);
    pending ??= fetchToken().then(
      (token) => {
        cached = token;
        pending = undefined;
        return token;
      },
      (error: unknown) => {
        pending = undefined;
        throw error;
      },
    );
    return pending;
  }

  async function post(token: AccessToken, payload: string): Promise<PushAnswer> {
    return request(sendUrl, {
      method: "POST",
      headers: { Authorization: `Bearer ${token.value}`, "Content-Type": "application/json; charset=utf-8" },
      body: payload,
    });
  }

  return {
    name: "fcm",

    accepts(device: Device): boolean {
      return typeof device.fcm_token === "string" && device.fcm_token !== "";
    },

    async send(_owner: Owner, device: Device, message: PushMessage): Promise<void> {
      const target = deviceToken(device);
      const payload = JSON.stringify({ message: fcmMessage(target, message) });
      return gate(target, async () => {
        let token = await accessToken();
        let response = await post(token, payload);
        if (response.status === 401) {
          // Only drop the token this send used: a concurrent send may already have replaced it.
          if (cached === token) cached = undefined;
          token = await accessToken();
          response = await post(token, payload);
        }
        if (!response.ok) throw sendError(device, response.status, response.text);
      });
    },
  };
}

function fcmMessage(token: string, message: PushMessage): object {
  // A clearing push is data only: the app removes the notification of that tag (docs/PROTOCOL.md §21).
  const tag = message.picker_id ?? message.message_id;
  if (message.clear && tag !== undefined) return { token, data: { dismiss: tag }, android: { priority: "high" } };
  const data: Record<string, string> = { kind: message.kind };
  if (message.chat_id) data.chat_id = message.chat_id;
  if (message.thread_id) data.thread_id = message.thread_id;
  if (message.message_id) data.message_id = message.message_id;
  if (message.notification_kind) data.notification_kind = message.notification_kind;
  if (message.picker_id) data.picker_id = message.picker_id;
  // The app shows an ask's buttons from data (FCM values are strings): each posts {token} to its url.
  if (message.actions?.length) data.actions = JSON.stringify(message.actions);
  if (message.url) data.url = message.url;
  return {
    token,
    notification: { title: message.title, body: truncateUtf8(message.body, MAX_BODY_BYTES) },
    data,
    android: { priority: "high" },
  };
}

/** The FCM error code lives in `details[].errorCode`; `status` is the coarser gRPC one. */
function fcmError(text: string): { code?: string; message?: string } {
  try {
    const body = JSON.parse(text) as {
      error?: { message?: unknown; status?: unknown; details?: Array<{ errorCode?: unknown }> };
    };
    const error = body.error;
    if (!error) return {};
    const detailCode = Array.isArray(error.details)
      ? error.details.map((d) => d?.errorCode).find((c) => typeof c === "string")
      : undefined;
    return {
      code: (detailCode as string | undefined) ?? (typeof error.status === "string" ? error.status : undefined),
      message: typeof error.message === "string" ? error.message : undefined,
    };
  } catch {
    return text ? { message: text.slice(0, 200) } : {};
  }
}

function oauthDetail(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; error_description?: unknown };
    const parts = [body.error, body.error_description].filter((p) => typeof p === "string");
    if (parts.length > 0) return `: ${parts.join(": ")}`;
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return text ? `: ${text.slice(0, 200)}` : "";
}

function parsePrivateKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    // Keys pasted into environment variables often arrive with literal "\n" sequences.
    key = createPrivateKey(pem.includes("\\n") ? pem.replace(/\\n/g, "\n") : pem);
  } catch (cause) {
    throw new TypeError("fcmPushSender: `serviceAccount.private_key` is not a PEM private key", { cause });
  }
  if (key.asymmetricKeyType !== "rsa") {
    throw new TypeError(
      `fcmPushSender: \`serviceAccount.private_key\` must be an RSA key, got ${String(key.asymmetricKeyType)}`,
    );
  }
  return key;
}

function parseUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`fcmPushSender: \`${name}\` is not a URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`fcmPushSender: \`${name}\` must be http or https, got ${url.protocol}`);
  }
  // As given, not normalised: the token URL is also the JWT audience, which must match exactly.
  return value;
}
