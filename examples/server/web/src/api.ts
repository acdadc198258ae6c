// The HTTP side: login status, sign in and out. A 401 anywhere means "sign in again".
export interface AuthStatus {
  enabled: boolean;
  user: string | null;
  expires_at: number | null;
}

export class Unauthorized extends Error {}

let onUnauthorized: () => void = () => undefined;

/** What to do when any request answers 401. */
export function handleUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(path, {
    credentials: "same-origin",
    ...init,
    headers: { "content-type": "application/json", ...(init?.headers ?? {}) },
  });
  if (res.status === 401 && path !== "/api/auth/login") {
    onUnauthorized();
    throw new Unauthorized("login required");
  }
  const body = (await res.json().catch(() => ({}))) as T & { error?: string; retry_after?: number };
  if (!res.ok)
    throw Object.assign(new Error(body.error ?? `HTTP ${res.status}`), {
      status: res.status,
      retryAfter: body.retry_after,
    });
  return body;
}

export function authStatus(): Promise<AuthStatus> {
  return call<AuthStatus>("/api/auth/status");
}

export function login(username: string, password: string): Promise<{ username: string; expires_at: number }> {
  return call("/api/auth/login", { method: "POST", body: JSON.stringify({ username, password }) });
}

export function logout(): Promise<unknown> {
  return call("/api/auth/logout", { method: "POST", body: "{}" });
}

/** One run of a schedule, as `GET /api/automations` lists it. */
export interface ScheduleRunInfo {
  slot: number;
  status: "running" | "ok" | "error";
  at: number;
  error?: string;
}

/** The signed-in owner's hooks and schedules (`GET /api/automations`, read-only). */
export interface Automations {
  hooks: Array<{ name: string; chat_id: string; mode: "post" | "turn" }>;
  schedules: Array<{
    name: string;
    chat_id: string;
    cron: string;
    tz: string;
    next_run: number | null;
    last_run: ScheduleRunInfo | null;
  }>;
}

export function automations(): Promise<Automations> {
  return call<Automations>("/api/automations");
}

/** A paired device as `GET /api/devices` lists it (docs/PROTOCOL.md §16); times in Unix seconds. */
export interface PairedDevice {
  device_id: string;
  name: string;
  created: number;
  last_seen: number;
}

export function listDevices(): Promise<{ devices: PairedDevice[] }> {
  return call("/api/devices");
}

export function revokeDevice(deviceId: string): Promise<unknown> {
  return call(`/api/devices/${encodeURIComponent(deviceId)}`, { method: "DELETE" });
}

export function pairDevice(): Promise<{ code: string; url: string; expires_at: number }> {
  return call("/api/devices/pair", { method: "POST", body: "{}" });
}

/** The server's VAPID public key, for `pushManager.subscribe`. */
export function vapidKey(): Promise<{ public_key: string }> {
  return call("/api/push/vapid");
}

/** Whom a pairing code would sign this browser in as (docs/PROTOCOL.md §16). */
export interface PairingLookup {
  username: string;
  /** The device name the code was made with. */
  name: string;
  expires_at: number;
}

/**
 * A post of the pairing endpoints. Not through `call`: a wrong code answers 401, which here means
 * "that code", not "sign in again".
 */
async function pairingCall<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (res.ok) return answer;
  throw new Error(answer.error ?? `HTTP ${res.status}`);
}

/** The account a pairing code joins, without using the code up: what the person is asked about. */
export function lookupPairingCode(code: string): Promise<PairingLookup> {
  return pairingCall("/api/devices/lookup", { code });
}

/**
 * Redeem a pairing code once the person said yes: the answer's cookie signs this browser in.
 * `replaceSession` is their yes to signing out of the other account this browser is signed in as.
 */
export async function redeemPairingCode(code: string, deviceName: string, replaceSession: boolean): Promise<void> {
  await pairingCall("/api/devices/redeem", {
    code,
    device_name: deviceName,
    confirm: true,
    replace_session: replaceSession,
  });
}
