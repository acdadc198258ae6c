import type { IncomingMessage, ServerResponse } from "node:http";
import type { Authenticator, Session, SessionStore, UpgradeDecision } from "chat-gateway";
import { sendJson, serveAuthApi, type AuthContext } from "./auth-api.js";
import { canonicalPath, isGatedPath, normalizeOrigin, originAllowed, PUBLIC_PATHS, readCredential, type TrustProxy } from "./gate.js";
import { LoginLockout, type LockoutStore } from "./lockout.js";
import { PasswordVerifier } from "./passwords.js";
import { sessionAuthenticator } from "./session-authenticator.js";
import { memorySessionStore } from "./sessions.js";
import { UserStore, type UserStoreSnapshot } from "./user-store.js";

/** Options of {@link createLoginProtection}. */
export interface LoginProtectionOptions {
  /** Path of the user store JSON file (it may not exist: protection is then off). */
  usersFile: string;
  /** Service name; the cookie is `<service>_session`. Default `"gateway"`. */
  service?: string;
  /** Where sessions live. Default: {@link memorySessionStore} (sessions end with the process). */
  sessions?: SessionStore;
  /**
   * Where failed-login counts and lockouts live. Default: this process's memory. Give a shared
   * store (`redisLockoutStore` of `chat-gateway/redis`) when several processes serve one site.
   */
  lockoutStore?: LockoutStore;
  /**
   * Believe `X-Forwarded-For` / `-Proto` / `-Host` from this many proxies in front of the server
   * (`true` = 1). Default `false`: the client IP is the socket's address.
   */
  trustProxy?: TrustProxy;
  /**
   * Origins (`https://app.example.com`) besides the server's own that may open a WebSocket under
   * `/ws/` with the session cookie. Default none.
   */
  allowedOrigins?: readonly string[];
  /** Current time in milliseconds since the epoch. Default `Date.now`; tests inject their own. */
  clock?: () => number;
  /** Logins allowed to wait for a bcrypt worker; one more is answered 429. Default 32. */
  maxLoginQueue?: number;
  /** bcrypt worker threads. Default 2. */
  workers?: number;
  /** Largest accepted request body of `POST /api/auth/login`, in bytes. Default 16384. */
  maxBodyBytes?: number;
  /**
   * Where to report a user store the server has to ignore (unreadable, malformed, bad entries) and
   * unexpected errors. Default `console.warn`.
   */
  log?: (message: string) => void;
}

/** The login protection of one server; see {@link createLoginProtection}. */
export interface LoginProtection {
  /**
   * Handles a request before the application's own routes. Serves `/api/ping` and `/api/auth/*`,
   * and answers 401 to any other `/api/` or `/ws/` path without a valid session while protection
   * is on. Resolves true when it answered, false when the request may go on (then
   * {@link LoginProtection.userOf} tells who is signed in). Never rejects: an unexpected failure
   * is answered 500.
   */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /**
   * The same gate for a WebSocket upgrade, before upgrading: under `/api/` or `/ws/` (the public
   * endpoints included) with protection on, a valid session (bearer beats cookie; an empty bearer falls back to the cookie)
   * is required, else `{ok: false, status: 401}`; a cookie-authenticated upgrade with a foreign
   * `Origin` gets 403. `ok: true` carries `context.session` when a session was used; with
   * protection off, or on another path, it carries none.
   */
  authorizeUpgrade(req: IncomingMessage): Promise<UpgradeDecision>;
  /** An {@link Authenticator} for `createGateway({ authenticator })` that accepts these sessions. */
  authenticator(): Authenticator;
  /**
   * The signed-in username of a request that {@link LoginProtection.handle} let through on a gated
   * path (`/api/`, `/ws/`) while protection is on; null otherwise.
   */
  userOf(req: IncomingMessage): string | null;
  /** Whether login protection is on now (the user store holds at least one user). */
  enabled(): Promise<boolean>;
  /** The user store this protection reads. */
  readonly users: UserStore;
  /** Stops the bcrypt workers and timers. Idempotent. */
  close(): Promise<void>;
}

const SERVICE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Login protection for a `node:http` (or `https`) server: the user store, sessions, the login API,
 * the failed-login lockout and the gate of every `/api/` and `/ws/` path (docs/PROTOCOL.md §9). With no
 * users in the store it is off and lets everything through; `user add` turns it on without a
 * restart.
 *
 * @example Mount it in front of an existing server
 * ```ts
 * import http from "node:http";
 * import { WebSocketServer } from "ws";
 * import { createLoginProtection } from "chat-gateway/http";
 *
 * const protection = createLoginProtection({ usersFile: "/var/lib/gateway/users.json" });
 * const server = http.createServer(async (req, res) => {
 *   if (await protection.handle(req, res)) return; // login API, or 401
 *   const user = protection.userOf(req); // signed-in user on /api/ and /ws/ paths
 *   myRoutes(req, res, user);
 * });
 * const wss = new WebSocketServer({ noServer: true });
 * server.on("upgrade", async (req, socket, head) => {
 *   const decision = await protection.authorizeUpgrade(req);
 *   if (!decision.ok) {
 *     const body = JSON.stringify({ error: decision.message });
 *     socket.end(`HTTP/1.1 ${decision.status} ${http.STATUS_CODES[decision.status]}\r\n` +
 *       `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
 *     return;
 *   }
 *   wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, decision.context));
 * });
 * // createGateway({ authenticator: protection.authenticator(), ... })
 * server.on("close", () => void protection.close());
 * ```
 * @throws {TypeError} on a bad option
 */
export function createLoginProtection(options: LoginProtectionOptions): LoginProtection {
  const service = options.service ?? "gateway";
  if (!SERVICE.test(service)) throw new TypeError(`createLoginProtection: service ${JSON.stringify(service)} must be 1 to 64 letters, digits, "_", "-" or "."`);
  const allowed = new Set<string>();
  for (const origin of options.allowedOrigins ?? []) {
    const normal = normalizeOrigin(origin);
    if (normal === undefined) throw new TypeError(`createLoginProtection: allowedOrigins entry ${JSON.stringify(origin)} is not an origin like https://example.com`);
    allowed.add(normal);
  }
  const maxBodyBytes = options.maxBodyBytes ?? 16_384;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 256) throw new TypeError("createLoginProtection: maxBodyBytes must be an integer >= 256");
  const store = options.lockoutStore;
  if (store !== undefined && (typeof store?.check !== "function" || typeof store.fail !== "function" || typeof store.succeed !== "function")) {
    throw new TypeError("createLoginProtection: lockoutStore must have check, fail and succeed methods");
  }
  const clock = options.clock ?? Date.now;
  const log = options.log ?? ((message: string) => console.warn(`chat-gateway/http: ${message}`));
  const users = new UserStore(options.usersFile);
  const sessions = options.sessions ?? memorySessionStore();
  const verifier = new PasswordVerifier({ workers: options.workers, maxQueue: options.maxLoginQueue });
  const lockout = new LoginLockout();
  const cookieName = `${service}_session`;
  const signedIn = new WeakMap<IncomingMessage, string>();
  const sweeper = setInterval(() => lockout.sweep(clock()), 60_000);
  sweeper.unref();
  let closed = false;

  let seen: UserStoreSnapshot | undefined;
  /** Sessions of users removed or given a new password being ended; every lookup waits for it. */
  let revoking: Promise<void> = Promise.resolve();
  async function snapshot(): Promise<UserStoreSnapshot> {
    const now = await users.current();
    if (now !== seen) {
      const before = seen;
      seen = now;
      if (now.problem) log(now.problem);
      if (before) {
        const changed = [...before.users].filter(([name, hash]) => now.users.get(name) !== hash).map(([name]) => name);
        if (changed.length > 0) {
          revoking = revoking
            .then(() => Promise.all(changed.map((name) => sessions.deleteUser(name))))
            .then(
              () => undefined,
              (error: unknown) => log(`could not end the sessions of ${changed.join(", ")}: ${String(error)}`),
            );
        }
      }
    }
    await revoking;
    return now;
  }

  async function enabledNow(): Promise<{ on: boolean; users: ReadonlyMap<string, string> }> {
    const snap = await snapshot();
    return { on: snap.users.size > 0, users: snap.users };
  }

  async function validSession(token: string): Promise<Session | undefined> {
    const { users: known } = await snapshot();
    const session = await sessions.get(token, Math.floor(clock() / 1000));
    // The user check also covers a shared store fed by a process that still knows a removed user.
    return session !== undefined && known.has(session.username) ? session : undefined;
  }

  async function sessionOf(req: IncomingMessage): Promise<Session | undefined> {
    const credential = readCredential(req, cookieName);
    return credential === undefined ? undefined : validSession(credential.token);
  }

  const ctx: AuthContext = {
    users,
    sessions,
    verifier,
    lockout,
    lockoutStore: options.lockoutStore,
    cookieName,
    trustProxy: options.trustProxy,
    maxBodyBytes,
    waiting: { count: 0 },
    clock,
    enabled: enabledNow,
    sessionOf,
  };

  return {
    users,
    async handle(req, res) {
      const pathname = canonicalPath(req.url);
      if (!isGatedPath(pathname)) return false;
      try {
        if (PUBLIC_PATHS.has(pathname)) {
          await serveAuthApi(ctx, pathname, req, res);
          return true;
        }
        if (!(await enabledNow()).on) return false;
        const session = await sessionOf(req);
        if (session === undefined) {
          sendJson(res, 401, { error: "login required" });
          return true;
        }
        signedIn.set(req, session.username);
        return false;
      } catch (error) {
        log(`login protection failed on ${req.method} ${pathname}: ${(error as Error)?.stack ?? String(error)}`);
        if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
        else res.destroy();
        return true;
      }
    },
    async authorizeUpgrade(req) {
      const pathname = canonicalPath(req.url);
      // The public endpoints are not WebSocket endpoints: an upgrade there is gated like any other.
      if (!isGatedPath(pathname)) return { ok: true };
      try {
        if (!(await enabledNow()).on) return { ok: true };
        const credential = readCredential(req, cookieName);
        const session = credential === undefined ? undefined : await validSession(credential.token);
        if (credential === undefined || session === undefined) return { ok: false, status: 401, message: "login required" };
        if (credential.via === "cookie" && !originAllowed(req, allowed, options.trustProxy)) {
          return { ok: false, status: 403, message: "origin not allowed" };
        }
        return { ok: true, context: { session: { username: session.username, token: session.token } } };
      } catch (error) {
        log(`login protection failed on upgrade ${pathname}: ${(error as Error)?.stack ?? String(error)}`);
        return { ok: false, status: 500, message: "internal error" };
      }
    },
    authenticator() {
      return sessionAuthenticator({ enabled: async () => (await enabledNow()).on, session: validSession });
    },
    userOf(req) {
      return signedIn.get(req) ?? null;
    },
    async enabled() {
      return (await enabledNow()).on;
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(sweeper);
      await verifier.close();
    },
  };
}
