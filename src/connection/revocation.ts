/**
 * Revocations: which open connections lose their right to go on when a credential ends (logout,
 * a removed user, a new password, login turning on). The gateway closes them with 4401.
 * @module
 */

import type { Revocation } from "../contracts/authenticator.js";
import type { Clock, ClockTimer } from "../support/clock.js";
export type { Revocation } from "../contracts/authenticator.js";

/** True when `revocation` ends a connection admitted as `user` with `sessions`. */
function revokes(revocation: Revocation, user: string | null, sessions: readonly string[]): boolean {
  if ("session" in revocation) return sessions.includes(revocation.session);
  if ("user" in revocation) return user === revocation.user;
  return user === null;
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

/** The gateway's time: `now` the epoch milliseconds credentials expire in, `clock` the timers. */
export interface ExpiryTime {
  now(): number;
  readonly clock: Clock;
}

/** Calls `fire` once `time.now()` reaches `at` (milliseconds since the epoch). Returns the canceller. */
function fireAt(at: number, time: ExpiryTime, fire: () => void): () => void {
  let timer: ClockTimer | undefined;
  const arm = () => {
    const wait = at - time.now();
    if (wait <= 0) return fire();
    timer = time.clock.setTimeout(arm, Math.min(wait, MAX_DELAY_MS), true);
  };
  arm();
  return () => time.clock.clearTimeout(timer);
}

/**
 * Distinct sessions and users remembered while one hello is being authenticated. Past it they are
 * forgotten and the authenticator is asked again, its new answer postdating them.
 */
const MAX_HEARD = 1000;

/** What {@link AdmissionWatch.admit} decided. `recheck`: too many revocations came to remember; ask again. */
export type AdmitVerdict = "admitted" | "revoked" | "recheck";

/**
 * Revocations heard while a hello is authenticated, kept as sets (a repeat costs nothing). The sets
 * are made at the first revocation of their kind: nearly every hello hears none.
 */
class Heard {
  sessions: Set<string> | undefined;
  users: Set<string> | undefined;
  anonymous = false;
  overflowed = false;

  /** Remembers `revocation`; past {@link MAX_HEARD} distinct ones forgets them all and overflows. */
  add(revocation: Revocation): void {
    if ("session" in revocation) {
      this.sessions ??= new Set();
      this.sessions.add(revocation.session);
    } else if ("user" in revocation) {
      this.users ??= new Set();
      this.users.add(revocation.user);
    } else {
      this.anonymous = true;
    }
    if ((this.sessions?.size ?? 0) + (this.users?.size ?? 0) > MAX_HEARD) {
      this.overflowed = true;
      this.sessions = undefined;
      this.users = undefined;
    }
  }

  /** True when a revocation heard ends a connection admitted as `user` with `sessions`. */
  revokes(user: string | null, sessions: readonly string[]): boolean {
    if (user === null ? this.anonymous : this.users?.has(user) === true) return true;
    const heard = this.sessions;
    return heard !== undefined && sessions.some((session) => heard.has(session));
  }
}

/** Shared by every connection admitted without a session, rather than an empty array each. */
const NO_SESSIONS: readonly string[] = Object.freeze([]);

/**
 * The revocation side of one connection: what it was admitted with, the revocations it heard while
 * its authenticator ran (whose answer may predate them), and its expiry timer.
 */
export class AdmissionWatch {
  /**
   * What the connection was admitted with: its user, and its login sessions (undefined until it is
   * admitted). Two fields here rather than an object of its own for every connection.
   */
  #user: string | null = null;
  #sessions: readonly string[] | undefined;
  #heard: Heard | undefined;
  #cancelExpiry: (() => void) | undefined;

  /** The authenticator starts; revocations from now on are remembered. */
  begin(): void {
    this.#heard = new Heard();
  }

  /** The authenticator refused or failed. */
  abandon(): void {
    this.#heard = undefined;
  }

  /**
   * The authenticator answered. `revoked` when a revocation heard meanwhile covers the answer;
   * `recheck` when too many came to tell (only the ones that concern it may refuse it, so it is
   * asked again). On `admitted` arms `onExpiry` for `auth.expiresAt`.
   */
  admit(
    auth: { user: string | null; sessions?: readonly string[]; expiresAt?: number },
    time: ExpiryTime,
    onExpiry: () => void,
  ): AdmitVerdict {
    const heard = this.#heard;
    this.#heard = undefined;
    // An empty list is not kept: most connections share the one of every connection without a session.
    const sessions = auth.sessions?.length ? auth.sessions : NO_SESSIONS;
    if (heard?.overflowed) return "recheck";
    if (heard?.revokes(auth.user, sessions)) return "revoked";
    this.#user = auth.user;
    this.#sessions = sessions;
    if (auth.expiresAt !== undefined) this.#cancelExpiry = fireAt(auth.expiresAt, time, onExpiry);
    return "admitted";
  }

  /** True when `revocation` ends this (admitted) connection. */
  hear(revocation: Revocation): boolean {
    if (this.#sessions !== undefined) return revokes(revocation, this.#user, this.#sessions);
    const heard = this.#heard;
    if (heard === undefined || heard.overflowed) return false;
    heard.add(revocation);
    return false;
  }

  /** The connection closed. */
  stop(): void {
    this.#cancelExpiry?.();
    this.#heard = undefined;
  }
}
