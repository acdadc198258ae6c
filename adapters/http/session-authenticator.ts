import { ANONYMOUS_OWNER, type Authenticator, type Owner, type Revocation, type Session } from "chat-gateway";
import { GatewayError } from "chat-gateway/protocol";
import { sessionId } from "./sessions.js";

/** What {@link sessionAuthenticator} needs from the login protection. */
export interface SessionLookup {
  /** Whether login protection is on now. */
  enabled(): Promise<boolean>;
  /** The valid session of a token whose user still exists, or undefined. */
  session(token: string): Promise<Session | undefined>;
  /** Optional: where revocations come from; becomes the authenticator's `onRevocation`. */
  onRevocation?(listener: (revocation: Revocation) => void): () => void;
}

function admitted(sessions: readonly Session[]): { owner: Owner; user: string; sessions: string[]; expiresAt: number } {
  const user = sessions[0]!.username;
  const expiresAt = Math.min(...sessions.map((s) => s.expires_at)) * 1000;
  return { owner: user, user, sessions: sessions.map((s) => sessionId(s.token)), expiresAt };
}

/**
 * The `hello` rules of docs/PROTOCOL.md §2.2 over login sessions. Protection off: every token is accepted,
 * owner {@link ANONYMOUS_OWNER}, user null. Protection on: an empty `hello.token` uses the session
 * the upgrade was gated with (a browser cannot read its HttpOnly cookie); a non-empty one must be a
 * valid session, of the same user as the upgrade's session when there was one. Owner and user are
 * the username; the result names the sessions used (by {@link sessionId}) and expires with the
 * first of them, so the gateway closes the connection when one ends. A refusal is a
 * {@link GatewayError} `auth`.
 */
export function sessionAuthenticator(lookup: SessionLookup): Authenticator {
  return {
    async authenticate({ token, context }) {
      if (!(await lookup.enabled())) return { owner: ANONYMOUS_OWNER, user: null };
      const used: Session[] = [];
      if (context.session !== undefined) {
        // Looked up again: the session may have ended (logout, user removed) since the upgrade.
        const session = await lookup.session(context.session.token);
        if (session === undefined || session.username !== context.session.username)
          throw new GatewayError("auth", "session expired; sign in again");
        used.push(session);
      }
      if (token !== "") {
        const session = await lookup.session(token);
        if (session === undefined) throw new GatewayError("auth", "invalid or expired session token");
        if (used[0] !== undefined && session.username !== used[0].username)
          throw new GatewayError("auth", "hello.token belongs to another user than the connection's session");
        used.push(session);
      }
      if (used.length > 0) return admitted(used);
      throw new GatewayError("auth", "login required");
    },
    ...(lookup.onRevocation
      ? { onRevocation: (listener: (revocation: Revocation) => void) => lookup.onRevocation!(listener) }
      : {}),
  };
}
