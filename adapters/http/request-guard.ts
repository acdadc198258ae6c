import type { IncomingMessage } from "node:http";
import { forwardedHost, normalizeOrigin, originAllowed, type TrustProxy } from "./gate.js";

/** Options of {@link createRequestGuard}; the ws adapter and the login protection take the same. */
export interface RequestGuardOptions {
  /**
   * Origins (`https://app.example.com`) besides the server's own whose pages may open a WebSocket
   * (and post to the login API). `"*"` allows every origin. Default none.
   */
  allowedOrigins?: readonly string[] | "*";
  /**
   * Host names (`chat.example.com`, no port) a request may name in `Host` besides the loopback
   * names (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`) and the address it arrived on.
   * `"*"` allows every host. Default none.
   */
  allowedHosts?: readonly string[] | "*";
  /** Believe `X-Forwarded-Host` / `-Proto` from this many proxies (see `TrustProxy`). Default `false`. */
  trustProxy?: TrustProxy;
}

/** Why the guard refuses a request: the HTTP status to answer and a short reason. */
export interface GuardRefusal {
  /** 421 for a host the server does not answer for, 403 for a foreign origin. */
  status: 403 | 421;
  message: string;
}

/** The Host and Origin rules of one server (docs/PROTOCOL.md §9). */
export interface RequestGuard {
  /** Host rule: the request names a loopback host, the address it arrived on, or an allowed host. */
  host(req: IncomingMessage): GuardRefusal | undefined;
  /** Origin rule: no `Origin` (not a browser), the server's own origin, or an allowed one. */
  origin(req: IncomingMessage): GuardRefusal | undefined;
}

/** `name` or `name:port`, `[v6]` or `[v6]:port`: what a browser puts in `Host`. */
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::\d{1,5})?$/;
const NAME = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)$/;

/** The lower-case host name of a `Host` value (IPv6 in brackets), or undefined when malformed. */
function hostName(value: string | undefined): string | undefined {
  const match = value === undefined ? null : HOST.exec(value.trim().toLowerCase());
  return match?.[1];
}

/** True for the names that can only mean this machine. */
export function isLoopbackName(name: string): boolean {
  return (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    name === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
  );
}

/** The address a connection arrived on, as a host name (`[v6]` in brackets). */
function arrivedOn(req: IncomingMessage): string | undefined {
  let address = req.socket.localAddress;
  if (!address) return undefined;
  if (address.startsWith("::ffff:")) address = address.slice(7);
  return address.includes(":") ? `[${address.toLowerCase()}]` : address;
}

function names(
  owner: string,
  option: string,
  list: readonly string[] | "*" | undefined,
  normal: (entry: string) => string | undefined,
  example: string,
): Set<string> | "*" {
  if (list === "*") return "*";
  if (list === undefined) return new Set();
  if (!Array.isArray(list)) throw new TypeError(`${owner}: ${option} must be an array of strings or "*"`);
  const set = new Set<string>();
  for (const entry of list) {
    const value = typeof entry === "string" ? normal(entry) : undefined;
    if (value === undefined)
      throw new TypeError(`${owner}: ${option} entry ${JSON.stringify(entry)} is not ${example}`);
    set.add(value);
  }
  return set;
}

/**
 * The rules that keep a browser page of another site from using a server on this machine: the
 * Host rule refuses DNS rebinding (a foreign name that resolves here) with 421, the Origin rule
 * refuses pages of other origins with 403. Requests without `Origin` (not from a browser) pass the
 * Origin rule. `owner` prefixes the TypeError of a bad option.
 * @throws {TypeError} on a bad `allowedOrigins` or `allowedHosts` entry
 */
export function createRequestGuard(options: RequestGuardOptions = {}, owner = "createRequestGuard"): RequestGuard {
  const origins = names(
    owner,
    "allowedOrigins",
    options.allowedOrigins,
    normalizeOrigin,
    "an origin like https://example.com",
  );
  const hosts = names(
    owner,
    "allowedHosts",
    options.allowedHosts,
    (e) => NAME.exec(e.trim().toLowerCase())?.[1],
    "a host name like chat.example.com (no port)",
  );
  const trust = options.trustProxy;
  return {
    host(req) {
      if (hosts === "*") return undefined;
      const name = hostName(forwardedHost(req, trust));
      if (name !== undefined && (isLoopbackName(name) || name === arrivedOn(req) || hosts.has(name))) return undefined;
      return {
        status: 421,
        message:
          "host not allowed: this server answers for its loopback names, its address and the configured hosts only",
      };
    },
    origin(req) {
      if (origins === "*" || originAllowed(req, origins, trust)) return undefined;
      return { status: 403, message: "origin not allowed" };
    },
  };
}
