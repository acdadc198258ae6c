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
  const res = await fetch(path, { credentials: "same-origin", ...init, headers: { "content-type": "application/json", ...(init?.headers ?? {}) } });
  if (res.status === 401 && path !== "/api/auth/login") {
    onUnauthorized();
    throw new Unauthorized("login required");
  }
  const body = (await res.json().catch(() => ({}))) as T & { error?: string; retry_after?: number };
  if (!res.ok) throw Object.assign(new Error(body.error ?? `HTTP ${res.status}`), { status: res.status, retryAfter: body.retry_after });
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
  schedules: Array<{ name: string; chat_id: string; cron: string; tz: string; next_run: number | null; last_run: ScheduleRunInfo | null }>;
}

export function automations(): Promise<Automations> {
  return call<Automations>("/api/automations");
}
