import type { Revocation, SessionStore } from "chat-gateway";
import type { UserStore, UserStoreSnapshot } from "./user-store.js";

/** How often the user store is looked at (one `stat`), in milliseconds. */
export const USER_STORE_POLL_MS = 250;

/** What {@link watchUserStore} acts on. */
export interface UserStoreWatchOptions {
  sessions: SessionStore;
  /** Closes the connections a revocation covers. */
  revoke(revocation: Revocation): void;
  log(message: string): void;
}

/** The server's view of the user store, kept current; see {@link watchUserStore}. */
export interface UserStoreWatch {
  /** The store now, after the sessions of changed users have been ended. */
  snapshot(): Promise<UserStoreSnapshot>;
  /** Stops looking. */
  close(): void;
}

/**
 * Follows the user store, which the CLI changes from another process: a user removed or given a
 * new password loses their sessions and connections, and the first user added (login turning on)
 * ends the anonymous connections. It looks every {@link USER_STORE_POLL_MS} and on every request.
 */
export function watchUserStore(users: UserStore, options: UserStoreWatchOptions): UserStoreWatch {
  const { sessions, revoke, log } = options;
  let seen: UserStoreSnapshot | undefined;
  /** Sessions of users removed or given a new password being ended; every lookup waits for it. */
  let revoking: Promise<void> = Promise.resolve();

  function changed(before: UserStoreSnapshot, now: UserStoreSnapshot): void {
    const names = [...before.users].filter(([name, hash]) => now.users.get(name) !== hash).map(([name]) => name);
    for (const name of names) revoke({ user: name });
    if (before.users.size === 0 && now.users.size > 0) revoke({ anonymous: true });
    if (names.length === 0) return;
    revoking = revoking
      .then(() => Promise.all(names.map((name) => sessions.deleteUser(name))))
      .then(
        () => undefined,
        (error: unknown) => log(`could not end the sessions of ${names.join(", ")}: ${String(error)}`),
      );
  }

  async function snapshot(): Promise<UserStoreSnapshot> {
    const now = await users.current();
    if (now !== seen) {
      const before = seen;
      seen = now;
      if (now.problem) log(now.problem);
      if (before) changed(before, now);
    }
    await revoking;
    return now;
  }

  const timer = setInterval(() => void snapshot().catch((error: unknown) => log(`reading the user store failed: ${String(error)}`)), USER_STORE_POLL_MS);
  timer.unref();
  void snapshot();
  return { snapshot, close: () => clearInterval(timer) };
}
