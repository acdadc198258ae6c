/**
 * Login protection for the HTTP side of a gateway (docs/PROTOCOL.md §9): a user store of
 * bcrypt hashes managed by a command line, sessions by bearer token or cookie, the login API under
 * `/api/auth/`, a failed-login lockout, and a gate in front of every `/api/` and `/ws/` path and
 * WebSocket upgrade. Works with a plain `node:http` server; start with {@link createLoginProtection}.
 * {@link createMediaHandler} serves the owners' media to browsers without letting it run as a page.
 * {@link createHookHandler} takes signed webhook posts into automation channels (docs/PROTOCOL.md §17).
 *
 * Nothing to install beside chat-gateway: `bcryptjs` is among its dependencies, and passwords are
 * checked on worker threads of `node:worker_threads`.
 * @module
 */
export { createLoginProtection } from "./login-protection.js";
export type { LoginProtection, LoginProtectionOptions } from "./login-protection.js";
export {
  UserStore,
  UserStoreError,
  createUserStore,
  isValidUsername,
  checkUsername,
  checkNewPassword,
  INVALID_USERNAME_MESSAGE,
} from "./user-store.js";
export type { UserStoreState, UserStoreSnapshot } from "./user-store.js";
export { PasswordVerifier, hashPassword, truncatePassword, isBcryptHash } from "./passwords.js";
export type { PasswordVerifierOptions } from "./passwords.js";
export { memorySessionStore, createSessionToken, sessionId } from "./sessions.js";
export { createRequestGuard, isLoopbackName } from "./request-guard.js";
export type { RequestGuard, RequestGuardOptions, GuardRefusal } from "./request-guard.js";
export { LoginLockout, memoryLockoutStore } from "./lockout.js";
export type { LockoutCheck, LockoutStore, SharedLockoutCheck } from "./lockout.js";
export { sessionAuthenticator } from "./session-authenticator.js";
export type { SessionLookup } from "./session-authenticator.js";
export { canonicalPath, isGatedPath, readCredential, clientIp } from "./gate.js";
export type { Credential, TrustProxy } from "./gate.js";
export { runUserCli, USER_CLI_USAGE } from "./user-cli.js";
export { terminalText } from "./terminal-text.js";
export type { UserCliIO } from "./user-cli.js";
export type { UserCliData, AdoptionServer, AdoptionPlan } from "./adopt-anonymous.js";
export { planAdoption } from "./adopt-anonymous.js";
export { LOGIN_LIMITS } from "./limits.js";
export { createMediaHandler, contentDisposition } from "./media-route.js";
export type { MediaHandler, MediaHandlerOptions } from "./media-route.js";
export { memoryDeviceStore, deviceTokenDigest, DEVICE_TOKEN_SECONDS } from "./device-store.js";
export type { DeviceAddOutcome, DeviceTokenStore, PairedDevice, StoredDevice } from "./device-store.js";
export { fileDeviceStore } from "./device-file-store.js";
export { memoryApiKeyStore, apiKeyDigest, MAX_API_KEYS_PER_USER } from "./api-key-store.js";
export type { ApiKeyStore, ApiKeyInfo, StoredApiKey } from "./api-key-store.js";
export { fileApiKeyStore } from "./api-key-file-store.js";
export { createHookHandler, HOOK_LIMITS } from "./hook-route.js";
export {
  ASK_ACTION_LIMITS,
  createAskActionHandler,
  type AskActionHandler,
  type AskActionHandlerOptions,
} from "./ask-action.js";
export type { HookHandler, HookHandlerOptions } from "./hook-route.js";
export { signHookBody, verifyHookSignature, parseHookSignature, HOOK_TOLERANCE_SECONDS } from "./hook-signature.js";
export type { HookSignature } from "./hook-signature.js";
export { addHook, rotateHook, removeHook, listHooks } from "./hook-admin.js";
export { memoryHookBudget, type HookPostBudget } from "./hook-budget.js";
export type { HookInfo, NewHook } from "./hook-admin.js";
