import { createHash } from "node:crypto";
import type { Session, SessionStore } from "chat-gateway";
import { checkRedis, isCluster, type RedisClient } from "./options.js";
import { revocationChannel } from "./revocation-channel.js";

/** Options of {@link redisSessionStore}. */
export interface RedisSessionStoreOptions {
  /** Prefix of every key (default `chat-gateway:`). */
  prefix?: string;
}

function digest(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

// KEYS: session, user set. ARGV: digest, username, expires_at, ttl ms, session key prefix.
// Also forgets the user's sessions that Redis already expired, so the set stays as small as the live ones.
const CREATE = `
redis.call('HSET', KEYS[1], 'username', ARGV[2], 'expires_at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
for _, d in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if redis.call('EXISTS', ARGV[5] .. d) == 0 then redis.call('SREM', KEYS[2], d) end
end
redis.call('SADD', KEYS[2], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
return 1`;

// KEYS: session. ARGV: digest, user set prefix, revocation channel.
// Only a session that existed is announced: unknown tokens cost the other processes nothing.
const DELETE = `
local user = redis.call('HGET', KEYS[1], 'username')
redis.call('DEL', KEYS[1])
if user then
  redis.call('SREM', ARGV[2] .. user, ARGV[1])
  redis.call('PUBLISH', ARGV[3], 's:' .. ARGV[1])
end
return 1`;

// KEYS: user set. ARGV: session key prefix, revocation channel, username.
const DELETE_USER = `
for _, d in ipairs(redis.call('SMEMBERS', KEYS[1])) do redis.call('DEL', ARGV[1] .. d) end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'u:' .. ARGV[3])
return 1`;

/** What a message on the revocation channel says, or undefined for anything else. */
function parseRevocation(text: string): { session: string } | { user: string } | undefined {
  if (text.startsWith("s:") && text.length > 2) return { session: text.slice(2) };
  if (text.startsWith("u:") && text.length > 2) return { user: text.slice(2) };
  return undefined;
}

/**
 * A {@link SessionStore} on Redis, so a login made on one gateway process works on every other.
 * A session is a hash under the SHA-256 of its token (the token itself is never stored) with a
 * `PX` expiry at its `expires_at` (24 hours after login), and each user has a set of their session
 * digests so removing the user ends them all. Give it to `createLoginProtection({ sessions })`.
 *
 * Ending a session or a user's sessions is published on the channel `<prefix>session-revocations`;
 * `onRevocation` subscribes to it on a connection of its own (a duplicate of `redis`, opened at the
 * first listener and closed after the last), so every process closes the WebSocket connections
 * of a logout made on another. A revocation published while a process is cut off from Redis is
 * not replayed to it; its connections then end when their session expires.
 *
 * @throws {TypeError} when `redis` is not an ioredis client
 */
export function redisSessionStore(redis: RedisClient, options: RedisSessionStoreOptions = {}): SessionStore {
  const prefix = checkRedis("redisSessionStore", redis, options.prefix);
  // The scripts touch a session and its user's set, and a user's set and all its sessions, while a
  // lookup knows only the token: on a cluster every session key shares one hash tag (one slot;
  // logins are few). A single Redis keeps the untagged names, so running deployments keep their sessions.
  const keys = isCluster(redis) ? `${prefix}{sessions}:` : prefix;
  const sessionKey = `${keys}session:`;
  const userKey = `${keys}user-sessions:`;
  const channel = `${prefix}session-revocations`;
  return {
    async create(session, now) {
      const ttlMs = (session.expires_at - now) * 1000;
      // Already expired: storing it would only make get() delete it.
      if (!(ttlMs > 0)) return;
      const d = digest(session.token);
      await redis.eval(
        CREATE,
        2,
        sessionKey + d,
        userKey + session.username,
        d,
        session.username,
        String(session.expires_at),
        String(Math.ceil(ttlMs)),
        sessionKey,
      );
    },
    async get(token, now) {
      const d = digest(token);
      const found = await redis.hmget(sessionKey + d, "username", "expires_at");
      const [username, expires] = found;
      if (username === null || expires === null) return undefined;
      const expiresAt = Number(expires);
      if (expiresAt <= now) {
        await redis.eval(DELETE, 1, sessionKey + d, d, userKey, channel);
        return undefined;
      }
      const session: Session = { token, username, expires_at: expiresAt };
      return session;
    },
    async delete(token) {
      const d = digest(token);
      await redis.eval(DELETE, 1, sessionKey + d, d, userKey, channel);
    },
    async deleteUser(username) {
      await redis.eval(DELETE_USER, 1, userKey + username, sessionKey, channel, username);
    },
    onRevocation: revocationChannel(redis, channel, parseRevocation),
  };
}
