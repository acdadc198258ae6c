/**
 * Revocations: which open connections lose their right to go on when a credential ends (logout,
 * a removed user, a new password, login turning on). The gateway closes them with 4401.
 * @module
 */

/**
 * What ended. `session`: the login session with this id (the id an authenticator returned in
 * `AuthResult.sessions`; the login protection uses the SHA-256 hex of the token). `user`: every
 * connection whose `hello.ok.user` is this name. `anonymous`: every connection admitted without a
 * user (`user: null`, login was off).
 */
export type Revocation = { session: string } | { user: string } | { anonymous: true };

/** What a connection was admitted with, as far as revocations are concerned. */
export interface Admission {
  readonly user: string | null;
  readonly sessions: readonly string[];
}

/** True when `revocation` ends a connection admitted as `admission`. */
function revokes(revocation: Revocation, admission: Admission): boolean {
  if ("session" in revocation) return admission.sessions.includes(revocation.session);
  if ("user" in revocation) return admission.user === revocation.user;
  return admission.user === null;
}

/**
 * Checks what `gateway.revoke()` was given.
 * @throws {TypeError} when it is not one of the {@link Revocation} shapes
 */
export function checkRevocation(value: unknown): Revocation {
  const r = value as Partial<Record<"session" | "user" | "anonymous", unknown>> | null;
  if (typeof r === "object" && r !== null) {
    const keys = Object.keys(r);
    if (keys.length === 1) {
      if (typeof r.session === "string" && r.session !== "") return { session: r.session };
      if (typeof r.user === "string" && r.user !== "") return { user: r.user };
      if (r.anonymous === true) return { anonymous: true };
    }
  }
  throw new TypeError("gateway.revoke: give exactly one of { session: id }, { user: name } or { anonymous: true }");
}

/** setTimeout's longest delay (about 24.8 days); longer waits are re-armed. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Calls `fire` once `now()` reaches `at` (milliseconds since the epoch). The timer does not keep
 * the process alive. Returns the canceller.
 */
function fireAt(at: number, now: () => number, fire: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const wait = at - now();
    if (wait <= 0) return fire();
    timer = setTimeout(arm, Math.min(wait, MAX_DELAY_MS));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/** Revocations remembered while one hello is being authenticated; past it the hello is refused. */
const MAX_HEARD = 1000;

/**
 * The revocation side of one connection: what it was admitted with, the revocations it heard while
 * its authenticator ran (whose answer may predate them), and its expiry timer.
 */
export class AdmissionWatch {
  #admission: Admission | undefined;
  #heard: Revocation[] | undefined;
  #cancelExpiry: (() => void) | undefined;

  /** The authenticator starts; revocations from now on are remembered. */
  begin(): void {
    this.#heard = [];
  }

  /** The authenticator refused or failed. */
  abandon(): void {
    this.#heard = undefined;
  }

  /**
   * The authenticator admitted the connection. False when a revocation heard meanwhile covers it
   * (or too many came to tell). Otherwise arms `onExpiry` for `auth.expiresAt`.
   */
  admit(auth: { user: string | null; sessions?: readonly string[]; expiresAt?: number }, now: () => number, onExpiry: () => void): boolean {
    const heard = this.#heard ?? [];
    this.#heard = undefined;
    const admission: Admission = { user: auth.user, sessions: auth.sessions ?? [] };
    if (heard.length > MAX_HEARD || heard.some((r) => revokes(r, admission))) return false;
    this.#admission = admission;
    if (auth.expiresAt !== undefined) this.#cancelExpiry = fireAt(auth.expiresAt, now, onExpiry);
    return true;
  }

  /** True when `revocation` ends this (admitted) connection. */
  hear(revocation: Revocation): boolean {
    if (this.#admission !== undefined) return revokes(revocation, this.#admission);
    if (this.#heard && this.#heard.length <= MAX_HEARD) this.#heard.push(revocation);
    return false;
  }

  /** The connection closed. */
  stop(): void {
    this.#cancelExpiry?.();
    this.#heard = undefined;
  }
}
