import { LOGIN_LIMITS } from "./limits.js";

/** The value of the first cookie called `name` in a `Cookie` header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    return value;
  }
  return undefined;
}

/**
 * The session cookie's name: `__Host-<service>_session` over TLS, where the prefix makes the
 * browser refuse the cookie unless it is `Secure`, for this host only (no `Domain`) and `Path=/`,
 * so a sibling subdomain or a plain-HTTP page cannot plant one; `<service>_session` otherwise
 * (browsers refuse the prefix without TLS).
 */
export function sessionCookieName(service: string, secure: boolean): string {
  return secure ? `__Host-${service}_session` : `${service}_session`;
}

/**
 * The `Set-Cookie` value that hands a browser its session (docs/PROTOCOL.md §9.3), or a paired
 * device's token (docs/PROTOCOL.md §16).
 */
export function sessionCookie(
  name: string,
  token: string,
  secure: boolean,
  maxAgeSeconds: number = LOGIN_LIMITS.sessionSeconds,
): string {
  return `${name}=${token}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`;
}

/** The `Set-Cookie` value that makes a browser forget its session. */
export function clearedSessionCookie(name: string, secure: boolean): string {
  return `${name}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0${secure ? "; Secure" : ""}`;
}
