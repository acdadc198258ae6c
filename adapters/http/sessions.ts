import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { SessionStore } from "chat-gateway";

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

/** A session as the memory store keeps it: the token's digest, never the token. */
interface StoredSession {
  digest: Buffer;
  username: string;
  expires_at: number;
}

/**
 * The default {@link SessionStore}: sessions in this process's memory, gone on restart
 * (docs/PROTOCOL.md §9.3). Only the SHA-256 of a token is kept, as the key and for the final
 * constant-time comparison, so neither a heap dump nor timing gives a token away.
 */
export function memorySessionStore(): SessionStore {
  const byDigest = new Map<string, StoredSession>();
  return {
    async create(session, now) {
      for (const [key, s] of byDigest) if (s.expires_at <= now) byDigest.delete(key);
      const presented = digest(session.token);
      byDigest.set(presented.toString("hex"), {
        digest: presented,
        username: session.username,
        expires_at: session.expires_at,
      });
    },
    async get(token, now) {
      const presented = digest(token);
      const key = presented.toString("hex");
      const stored = byDigest.get(key);
      if (stored === undefined || !timingSafeEqual(stored.digest, presented)) return undefined;
      if (stored.expires_at <= now) {
        byDigest.delete(key);
        return undefined;
      }
      return { token, username: stored.username, expires_at: stored.expires_at };
    },
    async delete(token) {
      byDigest.delete(digest(token).toString("hex"));
    },
    async deleteUser(username) {
      for (const [key, s] of byDigest) if (s.username === username) byDigest.delete(key);
    },
  };
}
