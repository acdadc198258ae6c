import { ANONYMOUS_OWNER, GatewayError, type Authenticator, type Session } from "chat-gateway";

/** What {@link sessionAuthenticator} needs from the login protection. */
export interface SessionLookup {
  /** Whether login protection is on now. */
  enabled(): Promise<boolean>;
  /** The valid session of a token whose user still exists, or undefined. */
  session(token: string): Promise<Session | undefined>;
}

/**
 * The `hello` rules of docs/PROTOCOL.md §2.2 over login sessions. Protection off: every token is accepted,
 * owner {@link ANONYMOUS_OWNER}, user null. Protection on: an empty `hello.token` uses the session
 * the upgrade was gated with (a browser cannot read its HttpOnly cookie); a non-empty one must be a
 * valid session, of the same user as the upgrade's session when there was one. Owner and user are
 * the username. A refusal is a {@link GatewayError} `auth`.
 */
export function sessionAuthenticator(lookup: SessionLookup): Authenticator {
  return {
    async authenticate({ token, context }) {
      if (!(await lookup.enabled())) return { owner: ANONYMOUS_OWNER, user: null };
      let upgradeUser: string | undefined;
      if (context.session !== undefined) {
        // Looked up again: the session may have ended (logout, user removed) since the upgrade.
        const session = await lookup.session(context.session.token);
        if (session === undefined || session.username !== context.session.username) throw new GatewayError("auth", "session expired; sign in again");
        upgradeUser = session.username;
      }
      if (token !== "") {
        const session = await lookup.session(token);
        if (session === undefined) throw new GatewayError("auth", "invalid or expired session token");
        if (upgradeUser !== undefined && session.username !== upgradeUser) throw new GatewayError("auth", "hello.token belongs to another user than the connection's session");
        return { owner: session.username, user: session.username };
      }
      if (upgradeUser !== undefined) return { owner: upgradeUser, user: upgradeUser };
      throw new GatewayError("auth", "login required");
    },
  };
}
