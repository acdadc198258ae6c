/**
 * The `SessionStore` contract: where login sessions live. In memory by default (sessions end
 * with the process, docs/PROTOCOL.md §9.3); a shared store lets several processes accept one login.
 * @module
 */

/** A login session (docs/PROTOCOL.md §9.3). */
export interface Session {
  /** 256 random bits, URL-safe text. */
  token: string;
  username: string;
  /** Unix time in seconds. */
  expires_at: number;
}

/**
 * Keeps sessions. Implementations compare nothing themselves: the token is the key.
 *
 * A token is a bearer secret, so an implementation should not let the time a lookup takes depend
 * on how much of a guessed token is right: key sessions by a digest of the token (SHA-256), as the
 * memory store of `chat-gateway/login` does, rather than by the token itself. Every method may be
 * called concurrently; `now` is always Unix time in seconds.
 */
export interface SessionStore {
  /** Store a new session and drop every expired one (`expires_at <= now`). */
  create(session: Session, now: number): Promise<void>;
  /** The session for a token; an expired one is deleted and undefined is returned. `now` in Unix seconds. */
  get(token: string, now: number): Promise<Session | undefined>;
  /** End a session; unknown tokens are ignored. */
  delete(token: string): Promise<void>;
  /** End every session of a user (after the user is removed). */
  deleteUser(username: string): Promise<void>;
  /**
   * Optional, for stores shared by processes: call `listener` whenever any process ends a session
   * (`{session}`: the SHA-256 hex of its token) or all of a user's sessions (`{user}`), so every
   * process closes the connections they admitted. Returns the unsubscribe function.
   */
  onRevocation?(listener: (revocation: { session: string } | { user: string }) => void): () => void;
}
