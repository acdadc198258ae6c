/**
 * Login protection for the HTTP side of a gateway (docs/PROTOCOL.md §9): a user store of bcrypt
 * hashes, sessions by bearer token or cookie, the login API under `/api/auth/`, a failed-login
 * lockout, and a gate in front of every `/api/` and `/ws/` path and WebSocket upgrade. Works with a
 * plain `node:http` server; start with {@link createLoginProtection}. Paired devices and API keys
 * are in `chat-gateway/devices`, the user command line in `chat-gateway/cli`.
 *
 * Nothing to install beside chat-gateway: `bcryptjs` is among its dependencies, and passwords are
 * checked on worker threads of `node:worker_threads`.
 * @module
 */
export { createLoginProtection } from "../http/login-protection.js";
export type { LoginProtection, LoginProtectionOptions } from "../http/login-protection.js";
export { UserStore, UserStoreError, createUserStore, isValidUsername, checkUsername } from "../http/user-store.js";
export type { UserStoreState, UserStoreSnapshot } from "../http/user-store.js";
export { PasswordVerifier, hashPassword } from "../http/passwords.js";
export type { PasswordVerifierOptions } from "../http/passwords.js";
export { memorySessionStore, sessionId } from "../http/sessions.js";
export { sessionAuthenticator } from "../http/session-authenticator.js";
export type { SessionLookup } from "../http/session-authenticator.js";
export { memoryLockoutStore } from "../http/lockout.js";
export type { LockoutCheck, LockoutStore, SharedLockoutCheck } from "../http/lockout.js";
export { createRequestGuard, isLoopbackName } from "../http/request-guard.js";
export type { RequestGuard, RequestGuardOptions, GuardRefusal } from "../http/request-guard.js";
export { canonicalPath, clientIp } from "../http/gate.js";
export type { Credential, TrustProxy } from "../http/gate.js";
export { LOGIN_LIMITS } from "../http/limits.js";
