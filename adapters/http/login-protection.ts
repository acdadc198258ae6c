import type { IncomingMessage, ServerResponse } from "node:http";
import { resolveLogger } from "chat-gateway";
import type { Authenticator, Logger, Revocation, Session, SessionStore, UpgradeDecision } from "chat-gateway";
import { AddressRate } from "./address-rate.js";
import { keysFileOf, fileApiKeyStore } from "./api-key-file-store.js";
import { MAX_API_KEYS_PER_USER, type ApiKeyStore } from "./api-key-store.js";
import type { AuthContext } from "./auth-api.js";
import { sessionCookieName } from "./cookies.js";
import { devicesFileOf, fileDeviceStore } from "./device-file-store.js";
import { MAX_DEVICES_PER_USER, type DeviceTokenStore } from "./device-store.js";
import type { DevicesContext } from "./devices-api.js";
import { isTls, type TrustProxy } from "./gate.js";
import { LOGIN_LIMITS } from "./limits.js";
import { LoginLockout, type LockoutStore } from "./lockout.js";
import { PairingCodes } from "./pairing-codes.js";
import { PasswordVerifier } from "./passwords.js";
import { gateUpgrade, handleRequest } from "./protection-gate.js";
import { createRequestGuard, type RequestGuardOptions } from "./request-guard.js";
import { sessionAuthenticator } from "./session-authenticator.js";
import { sessionChecks } from "./session-checks.js";
import { memorySessionStore } from "./sessions.js";
import { UserStore } from "./user-store.js";
import { watchUserStore } from "./user-store-watch.js";

/** Options of {@link createLoginProtection}. */
export interface LoginProtectionOptions {
  /** Path of the user store JSON file (it may not exist: protection is then off). */
  usersFile: string;
  /**
   * Once login has been on, it stays on when the users file later holds no user: nobody can sign
   * in until a user is added again, and no connection is admitted without a session. Set it for a
   * server that listens on a non-loopback address (the example server does), where login turning
   * off would open it to the network. Default `false`: removing the last user turns login off.
   */
  loginStaysOn?: boolean;
  /**
   * Service name; the cookie is `<service>_session`, `__Host-<service>_session` over TLS.
   * Default `"gateway"`.
   */
  service?: string;
  /** Where sessions live. Default: {@link memorySessionStore} (sessions end with the process). */
  sessions?: SessionStore;
  /**
   * Where paired devices and the hashes of their tokens live (docs/PROTOCOL.md §16). Default:
   * `devices.json` beside the users file, which the device CLI edits. Give a shared store
   * (`redisDeviceStore` of `chat-gateway/redis`) when several processes serve one site.
   */
  devices?: DeviceTokenStore;
  /**
   * Devices one user may have paired at once (docs/PROTOCOL.md §16); one more pairing is refused
   * with 429 until one is revoked. An integer from 1 to 10,000. Default 50.
   */
  maxDevicesPerUser?: number;
  /**
   * Where the API keys of the doors live, as hashes (docs/PROTOCOL.md §19.1). Default: `keys.json`
   * beside the users file, which the key CLI edits.
   */
  apiKeys?: ApiKeyStore;
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
   * Origins (`https://app.example.com`) besides the server's own whose pages may open a WebSocket
   * (with the session cookie while login is on, at all while it is off) and post to
   * `/api/auth/login` and `/logout`. `"*"` allows every origin. Default none.
   */
  allowedOrigins?: RequestGuardOptions["allowedOrigins"];
  /**
   * Host names (no port) that requests may name in `Host` while login is off, besides the loopback
   * names and the address the request arrived on; other requests are answered 421 (DNS rebinding).
   * `"*"` allows every host. Default none.
   */
  allowedHosts?: RequestGuardOptions["allowedHosts"];
  /** Current time in milliseconds since the epoch. Default `Date.now`; tests inject their own. */
  clock?: () => number;
  /** Logins allowed to wait for a bcrypt worker; one more is answered 429. Default 32. */
  maxLoginQueue?: number;
  /** bcrypt worker threads. Default 2. */
  workers?: number;
  /** Largest accepted request body of `POST /api/auth/login`, in bytes. Default 16384. */
  maxBodyBytes?: number;
  /**
   * Receives a user store the server has to ignore (unreadable, malformed, bad entries) as warnings
   * and unexpected failures as errors. Default: the console, prefixed `chat-gateway/login:`.
   */
  logger?: Logger;
  /**
   * Receives what {@link LoginProtectionOptions.logger} would, warnings and errors alike.
   * @deprecated use logger
   */
  log?: (message: string) => void;
}

/** The login protection of one server; see {@link createLoginProtection}. */
export interface LoginProtection {
  /**
   * Handles a request before the application's own routes. While protection is off, answers 421 to
   * any request whose `Host` is not a loopback name, the address it arrived on or an allowed host
   * (DNS rebinding). Serves `/api/ping` and `/api/auth/*` (the login and logout posts need a JSON
   * body, 415, and no foreign `Origin`, 403), and answers 401 to any other `/api/` or `/ws/` path
   * without a valid session while protection is on. Resolves true when it answered, false when the
   * request may go on (then {@link LoginProtection.userOf} tells who is signed in). Never rejects:
   * an unexpected failure is answered 500.
   */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /**
   * The same gate for a WebSocket upgrade, before upgrading. Protection off: any path, a foreign
   * `Host` gets 421 and a foreign `Origin` 403 (no `Origin`, not a browser, passes). Protection on:
   * under `/api/` or `/ws/` (the public endpoints included) a valid session (bearer beats cookie;
   * an empty bearer falls back to the cookie) is required, else `{ok: false, status: 401}`; a
   * cookie-authenticated upgrade with a foreign `Origin` gets 403. `ok: true` carries
   * `context.session` when a session was used; with protection off, or on another path, it
   * carries none.
   */
  authorizeUpgrade(req: IncomingMessage): Promise<UpgradeDecision>;
  /**
   * An {@link Authenticator} for `createGateway({ authenticator })` that accepts these sessions,
   * paired devices' tokens and API keys (docs/PROTOCOL.md §19.1).
   * Through its `onRevocation` the gateway closes with 4401 the connections of a session that is
   * logged out or expires, of a user removed or given a new password, and the anonymous ones when
   * login turns on (the user store is looked at every 250 ms).
   */
  authenticator(): Authenticator;
  /**
   * The signed-in username of a request that {@link LoginProtection.handle} let through on a gated
   * path (`/api/`, `/ws/`) while protection is on; null otherwise.
   */
  userOf(req: IncomingMessage): string | null;
  /**
   * Whether login protection is on now: the users in force (the store's, or its last good set while
   * the file cannot be used) hold at least one user, or, with `loginStaysOn`, once did.
   */
  enabled(): Promise<boolean>;
  /** The user store this protection reads. */
  readonly users: UserStore;
  /** Stops the bcrypt workers and timers. Idempotent. */
  close(): Promise<void>;
}

const SERVICE = /^[A-Za-z0-9_.-]{1,64}$/;

/** The options that need checking before anything starts, checked, and the logger they name. */
function checkedOptions(options: LoginProtectionOptions): {
  service: string;
  guard: ReturnType<typeof createRequestGuard>;
  maxBodyBytes: number;
  maxDevices: number;
  logger: Logger;
} {
  const service = options.service ?? "gateway";
  if (!SERVICE.test(service))
    throw new TypeError(
      `createLoginProtection: service ${JSON.stringify(service)} must be 1 to 64 letters, digits, "_", "-" or "."`,
    );
  const guard = createRequestGuard(
    { allowedOrigins: options.allowedOrigins, allowedHosts: options.allowedHosts, trustProxy: options.trustProxy },
    "createLoginProtection",
  );
  const maxBodyBytes = options.maxBodyBytes ?? 16_384;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 256)
    throw new TypeError("createLoginProtection: maxBodyBytes must be an integer >= 256");
  const maxDevices = options.maxDevicesPerUser ?? MAX_DEVICES_PER_USER;
  if (!Number.isInteger(maxDevices) || maxDevices < 1 || maxDevices > 10_000)
    throw new TypeError("createLoginProtection: maxDevicesPerUser must be an integer from 1 to 10000");
  const store = options.lockoutStore;
  if (
    store !== undefined &&
    (typeof store?.check !== "function" || typeof store.fail !== "function" || typeof store.succeed !== "function")
  ) {
    throw new TypeError("createLoginProtection: lockoutStore must have check, fail and succeed methods");
  }
  const logger = resolveLogger("createLoginProtection", "chat-gateway/login:", options.logger, {
    name: "log",
    value: options.log,
  });
  return { service, guard, maxBodyBytes, maxDevices, logger };
}

/** Every revocation goes to each gateway listening; one listener failing does not stop the others. */
function revocationFanout(logger: Logger): {
  listeners: Set<(revocation: Revocation) => void>;
  revoke(revocation: Revocation): void;
} {
  const listeners = new Set<(revocation: Revocation) => void>();
  function revoke(revocation: Revocation): void {
    for (const listener of [...listeners]) {
      try {
        listener(revocation);
      } catch (error) {
        logger.error(`a revocation listener failed: ${String(error)}`);
      }
    }
  }
  return { listeners, revoke };
}

/** {@link LoginProtection.authenticator}: sessions of this protection, revocations through `listeners`. */
function protectionAuthenticator(
  enabledNow: () => Promise<{ on: boolean }>,
  validSession: (token: string) => Promise<Session | undefined>,
  listeners: Set<(revocation: Revocation) => void>,
): Authenticator {
  return sessionAuthenticator({
    enabled: async () => (await enabledNow()).on,
    session: validSession,
    onRevocation(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  });
}

/**
 * The paired-device store (docs/PROTOCOL.md §16) and the API key store (docs/PROTOCOL.md §19.1),
 * subscribed to revocations made elsewhere, and the pairing codes.
 */
function pairingParts(options: LoginProtectionOptions, revoke: (revocation: Revocation) => void) {
  const devices = options.devices ?? fileDeviceStore(devicesFileOf(options.usersFile));
  // A device revoked by the CLI or another process closes its connections here too.
  const unsubscribeDevices = devices.onRevocation?.((digest) => revoke({ session: digest }));
  // So does an API key removed by the CLI: its connections carry its digest as their session.
  const keys = options.apiKeys ?? fileApiKeyStore(keysFileOf(options.usersFile));
  const unsubscribeKeys = keys.onRevocation?.((digest) => revoke({ session: digest }));
  return {
    devices,
    keys,
    unsubscribeKeys,
    codes: new PairingCodes(),
    redeems: new AddressRate(LOGIN_LIMITS.maxRedeems, LOGIN_LIMITS.redeemWindowSeconds),
    unsubscribeDevices,
  };
}

/**
 * Login protection for a `node:http` (or `https`) server: the user store, sessions, the login API,
 * the failed-login lockout and the gate of every `/api/` and `/ws/` path (docs/PROTOCOL.md §9). With no
 * users in the store it is off and lets everything through; `user add` turns it on without a
 * restart.
 *
 * @example In front of a gateway on an existing server
 * ```ts
 * import http from "node:http";
 * import { createGateway } from "chat-gateway";
 * import { createLoginProtection } from "chat-gateway/login";
 * import { attachWebSocket } from "chat-gateway/ws";
 *
 * const protection = createLoginProtection({ usersFile: "/var/lib/gateway/users.json" });
 * const gateway = createGateway({ storage, runtime, authenticator: protection.authenticator() });
 * await gateway.start();
 * const server = http.createServer(async (req, res) => {
 *   if (await protection.handle(req, res)) return; // login API, or 401
 *   const user = protection.userOf(req); // signed-in user on /api/ and /ws/ paths
 *   myRoutes(req, res, user);
 * });
 * attachWebSocket(gateway, { server, path: "/ws/gateway", authorizeUpgrade: (req) => protection.authorizeUpgrade(req) });
 * server.on("close", () => void protection.close());
 * ```
 * Another WebSocket server gates its upgrades the same way: `protection.authorizeUpgrade(req)`
 * decides, and a refusal is answered with its `status` and `message` before any upgrade.
 * @throws {TypeError} on a bad option
 */
export function createLoginProtection(options: LoginProtectionOptions): LoginProtection {
  const { service, guard, maxBodyBytes, maxDevices, logger } = checkedOptions(options);
  const clock = options.clock ?? Date.now;
  const users = new UserStore(options.usersFile);
  const sessions = options.sessions ?? memorySessionStore();
  const verifier = new PasswordVerifier({ workers: options.workers, maxQueue: options.maxLoginQueue });
  const lockout = new LoginLockout();
  const cookieName = (req: IncomingMessage) => sessionCookieName(service, isTls(req, options.trustProxy));
  const signedIn = new WeakMap<IncomingMessage, string>();
  const logouts = new AddressRate(LOGIN_LIMITS.maxLogouts, LOGIN_LIMITS.logoutWindowSeconds);
  const { listeners, revoke } = revocationFanout(logger);
  // Other processes sharing the store end sessions too; their connections here must close as well.
  const unsubscribeStore = sessions.onRevocation?.(revoke);
  const { devices, keys, codes, redeems, unsubscribeDevices, unsubscribeKeys } = pairingParts(options, revoke);
  const sweeper = setInterval(() => {
    for (const counts of [lockout, logouts, redeems]) counts.sweep(clock());
  }, 60_000);
  sweeper.unref();
  let closed = false;

  const watch = watchUserStore(users, {
    sessions,
    devices,
    keys,
    userChanged: (name) => codes.dropUser(name),
    revoke,
    log: (m) => logger.warn(m),
    alarm: (m) => logger.error(m),
    staysOn: options.loginStaysOn === true,
  });
  const stores = { sessions, devices, keys };
  const { enabledNow, credential, sessionOf } = sessionChecks(watch, stores, clock, cookieName, revoke);

  const ctx: AuthContext = {
    users,
    sessions,
    verifier,
    lockout,
    lockoutStore: options.lockoutStore,
    logouts,
    cookieName,
    trustProxy: options.trustProxy,
    maxBodyBytes,
    waiting: { count: 0 },
    clock,
    enabled: enabledNow,
    sessionOf,
    guard,
    revoke,
    devices,
    keys,
    maxKeysPerUser: MAX_API_KEYS_PER_USER,
  };

  const dctx: DevicesContext = { auth: ctx, devices, codes, redeems, maxDevicesPerUser: maxDevices };
  return {
    users,
    handle: (req, res) => handleRequest(dctx, signedIn, logger, req, res),
    authorizeUpgrade: (req) => gateUpgrade(ctx, credential, logger, req),
    authenticator: () => protectionAuthenticator(enabledNow, credential, listeners),
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
      watch.close();
      unsubscribeStore?.();
      unsubscribeDevices?.();
      unsubscribeKeys?.();
      listeners.clear();
      await verifier.close();
    },
  };
}
