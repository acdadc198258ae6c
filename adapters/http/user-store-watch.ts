import type { Revocation, SessionStore } from "chat-gateway";
import type { ApiKeyStore } from "./api-key-store.js";
import type { DeviceTokenStore } from "./device-store.js";
import type { UserStore, UserStoreSnapshot } from "./user-store.js";

/** How often the user store is looked at (one `stat`), in milliseconds. */
export const USER_STORE_POLL_MS = 250;

/** What {@link watchUserStore} acts on. */
export interface UserStoreWatchOptions {
  sessions: SessionStore;
  /** Paired devices: a user removed or given a new password loses them too (docs/PROTOCOL.md §16). */
  devices?: DeviceTokenStore;
  /** API keys: a user removed or given a new password loses them too (docs/PROTOCOL.md §19.1). */
  keys?: ApiKeyStore;
  /** Called with each user removed or given a new password. */
  userChanged?(username: string): void;
  /** Closes the connections a revocation covers. */
  revoke(revocation: Revocation): void;
  log(message: string): void;
  /** Says what must not go unnoticed: a users file that was good and no longer is. Default `log`. */
  alarm?(message: string): void;
  /** Once on, login stays on when the last user goes (see `LoginProtectionOptions.loginStaysOn`). */
  staysOn?: boolean;
}

/** The server's view of the user store, kept current; see {@link watchUserStore}. */
export interface UserStoreWatch {
  /**
   * The users in force, after the sessions of changed users have been ended: the store now, or,
   * while a file read before is unreadable or malformed, the last good set.
   */
  snapshot(): Promise<UserStoreSnapshot>;
  /**
   * Whether login is on, as of the last {@link UserStoreWatch.snapshot}: a user is in force, or
   * with `staysOn`, one was at any time in this process.
   */
  loginOn(): boolean;
  /** Stops looking. */
  close(): void;
}

/** Ends what a user removed or given a new password held: sessions, paired devices, API keys. */
function forgetUser(options: UserStoreWatchOptions, name: string): Promise<unknown> {
  return Promise.all([
    options.sessions.deleteUser(name),
    options.devices?.removeUser(name),
    options.keys?.removeUser(name),
  ]);
}

/**
 * Follows the user store, which the CLI changes from another process: a user removed or given a
 * new password loses their sessions and connections, and the first user added (login turning on)
 * ends the anonymous connections. It looks every {@link USER_STORE_POLL_MS} and on every request.
 * A file once read that becomes unreadable or malformed changes nothing: the last good set stays
 * in force, and the alarm says so, until the file is good again (docs/PROTOCOL.md §9.7). It fails
 * closed: a service account that cannot read a file rewritten by root must not turn login off.
 */
export function watchUserStore(users: UserStore, options: UserStoreWatchOptions): UserStoreWatch {
  const { revoke, log } = options;
  const alarm = options.alarm ?? log;
  /** The snapshot in force: the last one that was not `unreadable`, or the first read whatever it was. */
  let inForce: UserStoreSnapshot | undefined;
  /** The last snapshot read, good or bad, so each change is reported once. */
  let seen: UserStoreSnapshot | undefined;
  let on = false;
  /** Sessions of users removed or given a new password being ended; every lookup waits for it. */
  let revoking: Promise<void> = Promise.resolve();

  function changed(before: UserStoreSnapshot, now: UserStoreSnapshot): void {
    const names = [...before.users].filter(([name, hash]) => now.users.get(name) !== hash).map(([name]) => name);
    for (const name of names) {
      revoke({ user: name });
      options.userChanged?.(name);
    }
    if (before.users.size === 0 && now.users.size > 0) {
      log("login is on now: the users file holds a user; connections made while it was off are closed");
      revoke({ anonymous: true });
    } else if (before.users.size > 0 && now.users.size === 0) {
      log(
        options.staysOn
          ? "the users file holds no user; login stays on"
          : "login is off now: the users file holds no user",
      );
    }
    if (names.length === 0) return;
    revoking = revoking
      .then(() => Promise.all(names.map((name) => forgetUser(options, name))))
      .then(
        () => undefined,
        (error: unknown) => log(`could not end the sessions of ${names.join(", ")}: ${String(error)}`),
      );
  }

  /** Takes a newly read snapshot into force, unless it is a bad file after a good one. */
  function adopt(now: UserStoreSnapshot): void {
    const before = inForce;
    if (now.state === "unreadable" && before !== undefined && before.state !== "unreadable") {
      alarm(
        `${now.problem ?? `user store ${users.path} cannot be used`}; keeping the ${before.users.size} users read before (login stays ${before.users.size > 0 ? "on" : "off"}) until it is fixed`,
      );
      return;
    }
    if (now.problem) log(now.state === "unreadable" ? `${now.problem}; treated as no users` : now.problem);
    if (before?.state === "unreadable" && now.state !== "unreadable") log(`user store ${users.path} can be used again`);
    inForce = now;
    if (now.users.size > 0) on = true;
    else if (on && options.staysOn)
      alarm(`user store ${users.path} holds no user; login stays on, so nobody can sign in until a user is added`);
    if (before) changed(before, now);
  }

  async function snapshot(): Promise<UserStoreSnapshot> {
    const now = await users.current();
    if (now !== seen) {
      seen = now;
      adopt(now);
    }
    await revoking;
    return inForce!;
  }

  const timer = setInterval(
    () => void snapshot().catch((error: unknown) => log(`reading the user store failed: ${String(error)}`)),
    USER_STORE_POLL_MS,
  );
  timer.unref();
  void snapshot();
  return {
    snapshot,
    loginOn: () => (inForce?.users.size ?? 0) > 0 || (on && options.staysOn === true),
    close: () => clearInterval(timer),
  };
}
