import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Session, SessionStore } from "chat-gateway";

/** A new session token: 256 random bits as base64url (43 characters). */
export function createSessionToken(): string {
  return randomBytes(32).toString("base64url");
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/**
 * The id of a session in revocations (`AuthResult.sessions`, `gateway.revoke({session})`, a
 * store's `onRevocation`): the SHA-256 of its token as lower-case hex, so the token itself never
 * travels or lingers.
 */
export function sessionId(token: string): string {
  return digest(token).toString("hex");
}

/**
 * The default {@link SessionStore}: sessions in this process's memory, gone on restart
 * (docs/PROTOCOL.md §9.3). Sessions are keyed by the SHA-256 of their token, so neither the lookup nor the
 * final constant-time comparison can leak a token's characters through timing.
 */
export function memorySessionStore(): SessionStore {
  const byDigest = new Map<string, Session>();
  return {
    async create(session, now) {
      for (const [key, s] of byDigest) if (s.expires_at <= now) byDigest.delete(key);
      byDigest.set(digest(session.token).toString("hex"), { ...session });
    },
    async get(token, now) {
      const presented = digest(token);
      const key = presented.toString("hex");
      const session = byDigest.get(key);
      if (session === undefined || !timingSafeEqual(digest(session.token), presented)) return undefined;
      if (session.expires_at <= now) {
        byDigest.delete(key);
        return undefined;
      }
      return { ...session };
    },
    async delete(token) {
      byDigest.delete(digest(token).toString("hex"));
    },
    async deleteUser(username) {
      for (const [key, s] of byDigest) if (s.username === username) byDigest.delete(key);
    },
  };
}
