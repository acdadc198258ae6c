import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { readCookie } from "./cookies.js";

/** The endpoints of the login API, open to everyone (docs/PROTOCOL.md §9.1). */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  "/api/ping",
  "/api/auth/status",
  "/api/auth/login",
  "/api/auth/logout",
  "/api/auth/users",
]);

/**
 * The path as the most lenient router would read it: the path of an absolute-form URL,
 * percent-decoded, repeated slashes collapsed, `.` and `..` resolved, lower case. The gate decides
 * on this form so that `//api/x`, `/%61pi/x`, `/x/../api/x`, `/API/x` (case-insensitive routers)
 * or `http://host/api/x` cannot slip past it.
 */
export function canonicalPath(url: string | undefined): string {
  let pathname = url ?? "/";
  if (!pathname.startsWith("/")) {
    try {
      pathname = new URL(pathname).pathname;
    } catch {
      /* not a URL either: judged as a path */
    }
  }
  pathname = pathname.split("?", 1)[0]!.split("#", 1)[0]!;
  for (let i = 0; i < 3 && pathname.includes("%"); i++) {
    try {
      pathname = decodeURIComponent(pathname);
    } catch {
      break;
    }
  }
  const out: string[] = [];
  for (const segment of pathname.replace(/\\/g, "/").split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  const trailing = pathname.endsWith("/") && out.length > 0 ? "/" : "";
  return `/${out.join("/")}${trailing}`.toLowerCase();
}

/** Webhook posts carry their own credential, a signature (docs/PROTOCOL.md §17): no session. */
export function isSignedPath(pathname: string): boolean {
  return pathname.startsWith("/api/hooks/");
}

/** True for `/api`, `/ws` and every path under them (compared on the canonical path). */
export function isGatedPath(pathname: string): boolean {
  return pathname === "/api" || pathname === "/ws" || pathname.startsWith("/api/") || pathname.startsWith("/ws/");
}

/** How the client presented its session token. */
export interface Credential {
  /** The session token as presented (a bearer token trimmed of whitespace). */
  token: string;
  /** Where it came from; only a cookie is subject to the Origin rule. */
  via: "bearer" | "cookie";
}

/**
 * The session token of a request: a non-empty bearer token wins; an empty or absent one falls
 * back to the `<service>_session` cookie. Another scheme in `Authorization` counts as absent.
 */
export function readCredential(req: IncomingMessage, cookieName: string): Credential | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^\s*bearer(?:\s+([\s\S]*))?$/i.exec(header);
    const token = match?.[1]?.trim() ?? "";
    if (token !== "") return { token, via: "bearer" };
  }
  const cookie = readCookie(req.headers.cookie, cookieName);
  return cookie ? { token: cookie, via: "cookie" } : undefined;
}

/**
 * Which `X-Forwarded-*` headers to believe: `false` (the default) none; `true` or `1` those set by
 * one proxy in front of the server; `n` those of a chain of `n` proxies.
 */
export type TrustProxy = boolean | number;

function hops(trust: TrustProxy | undefined): number {
  if (trust === true) return 1;
  return typeof trust === "number" && trust > 0 ? Math.floor(trust) : 0;
}

function first(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(",") : value;
  return text?.split(",")[0]?.trim() || undefined;
}

/**
 * The client IP used for the lockout: the socket's address, or the entry of `X-Forwarded-For`
 * added by the outermost trusted proxy. Entries further left are written by the client and ignored.
 */
export function clientIp(req: IncomingMessage, trust: TrustProxy | undefined): string {
  let ip = req.socket.remoteAddress ?? "unknown";
  const n = hops(trust);
  const header = req.headers["x-forwarded-for"];
  if (n > 0 && header !== undefined) {
    const list = (Array.isArray(header) ? header.join(",") : header)
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (list.length > 0) ip = list[Math.max(0, list.length - n)]!;
  }
  return ip.startsWith("::ffff:") ? ip.slice(7) : ip;
}

/** True when the request came over TLS (directly, or to a trusted proxy that says so). */
export function isTls(req: IncomingMessage, trust: TrustProxy | undefined): boolean {
  if ((req.socket as TLSSocket).encrypted) return true;
  return hops(trust) > 0 && first(req.headers["x-forwarded-proto"])?.toLowerCase() === "https";
}

/** `scheme://host[:port]` in the normalised form of `URL.origin`, or undefined. */
export function normalizeOrigin(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.origin === "null" ? undefined : url.origin.toLowerCase();
  } catch {
    return undefined;
  }
}

/** The `Host` the client asked for: the trusted proxy's `X-Forwarded-Host`, else `Host`. */
export function forwardedHost(req: IncomingMessage, trust: TrustProxy | undefined): string | undefined {
  return (hops(trust) > 0 ? first(req.headers["x-forwarded-host"]) : undefined) ?? req.headers.host;
}

/** The origin a browser shows for pages of this server, from the `Host` header. */
export function ownOrigin(req: IncomingMessage, trust: TrustProxy | undefined): string | undefined {
  const host = forwardedHost(req, trust);
  if (!host) return undefined;
  return normalizeOrigin(`${isTls(req, trust) ? "https" : "http"}://${host}`);
}

/**
 * The Origin rule of docs/PROTOCOL.md §9.4 for a cookie-authenticated WebSocket upgrade: no `Origin`
 * (not a browser) passes; otherwise it must be the server's own origin or an allowed one.
 */
export function originAllowed(
  req: IncomingMessage,
  allowed: ReadonlySet<string>,
  trust: TrustProxy | undefined,
): boolean {
  const header = req.headers.origin;
  if (header === undefined) return true;
  const origin = normalizeOrigin(header);
  if (origin === undefined) return false;
  return origin === ownOrigin(req, trust) || allowed.has(origin);
}
