/**
 * The `ApiKeyStore` contract and its memory implementation: where the API keys of the doors live
 * (docs/PROTOCOL.md §19.1), only as hashes.
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import { createDeviceId } from "./device-store.js";
import { terminalText } from "./terminal-text.js";

/** An API key as listed (`key list`, `GET /api/keys`): never the key or its hash. Times in Unix seconds. */
export interface ApiKeyInfo {
  key_id: string;
  username: string;
  /** What the person called it (`key add NAME`, `{name}`): 1 to 64 printable characters, unique among the user's keys. */
  name: string;
  created: number;
}

/** An API key with the SHA-256 hex of its token: what a store keeps (never the token). */
export interface StoredApiKey extends ApiKeyInfo {
  key_sha256: string;
}

/**
 * Keeps API keys. Only the SHA-256 of a key is stored, so a copy of the store lets nobody in.
 * Every method may be called concurrently, also by several processes sharing the store; each
 * change is one atomic step on the store's current content, so two adds at once both land and
 * the cap holds. Times are Unix seconds.
 */
export interface ApiKeyStore {
  /**
   * Stores a new key in one atomic step, unless the user has `maxPerUser` keys already (`full`)
   * or a key of the same name (`taken`); then nothing is stored. Names compare exactly.
   */
  add(key: StoredApiKey, maxPerUser: number): Promise<"added" | "full" | "taken">;
  /** The key whose token has this SHA-256 hex, or undefined. Must not wait for a change being written. */
  find(keySha256: string): Promise<StoredApiKey | undefined>;
  /** The keys of a user, oldest first. */
  list(username: string): Promise<StoredApiKey[]>;
  /** Forgets one key of a user; returns it, or undefined when the user has no such key. */
  remove(username: string, keyId: string): Promise<StoredApiKey | undefined>;
  /** Forgets every key of a user (removed, or given a new password); returns them. */
  removeUser(username: string): Promise<StoredApiKey[]>;
  /**
   * Optional, for stores another process changes (the CLI, a second server): calls `listener`
   * with the SHA-256 of each key removed elsewhere. Returns the unsubscribe function.
   */
  onRevocation?(listener: (keySha256: string) => void): () => void;
}

/** Keys one user may have at once (docs/PROTOCOL.md §19.1). */
export const MAX_API_KEYS_PER_USER = 20;

/** What every API key starts with, so a leaked one is recognised (by secret scanners too). */
export const API_KEY_PREFIX = "cgk_";

/** Longest key name, in characters (code points). */
export const MAX_API_KEY_NAME = 64;

/**
 * A key's name as given, trimmed; or undefined when it is not 1 to 64 printable characters. A
 * name is printable when the terminal has nothing to escape in it (no control, line-breaking or
 * reordering character), so `key list` shows it exactly as it was given.
 */
export function apiKeyName(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const name = value.trim();
  const length = [...name].length;
  return length >= 1 && length <= MAX_API_KEY_NAME && terminalText(name) === name ? name : undefined;
}

/** A new API key: `cgk_` and 256 random bits as base64url. */
export function createApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** Whether a bearer token has the form of an API key (checked before any lookup). */
export function isApiKey(token: string): boolean {
  return /^cgk_[A-Za-z0-9_-]{43}$/.test(token);
}

/** The SHA-256 hex of an API key: the only form a store keeps, and the session id its connections carry. */
export function apiKeyDigest(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** A new key id: 96 random bits as base64url, never starting with `-` (a command line would take it for an option). */
export const createApiKeyId: () => string = createDeviceId;

/** A key as listed: without its hash. */
export function keyInfo(key: StoredApiKey): ApiKeyInfo {
  return { key_id: key.key_id, username: key.username, name: key.name, created: key.created };
}

/** The common operations over a table of keys keyed by digest; each is one synchronous step. */
export function apiKeyTable(table: Map<string, StoredApiKey>): Omit<ApiKeyStore, "onRevocation"> {
  const ofUser = (username: string) => [...table.values()].filter((k) => k.username === username);
  return {
    async add(key, maxPerUser) {
      const mine = ofUser(key.username);
      if (mine.some((k) => k.name === key.name)) return "taken";
      if (mine.length >= maxPerUser) return "full";
      table.set(key.key_sha256, { ...key });
      return "added";
    },
    async find(digest) {
      const found = table.get(digest);
      return found === undefined ? undefined : { ...found };
    },
    async list(username) {
      return ofUser(username)
        .sort((a, b) => a.created - b.created)
        .map((k) => ({ ...k }));
    },
    async remove(username, keyId) {
      const found = ofUser(username).find((k) => k.key_id === keyId);
      if (found !== undefined) table.delete(found.key_sha256);
      return found;
    },
    async removeUser(username) {
      const gone = ofUser(username);
      for (const k of gone) table.delete(k.key_sha256);
      return gone;
    },
  };
}

/** An {@link ApiKeyStore} in this process's memory: keys end with the process. */
export function memoryApiKeyStore(): ApiKeyStore {
  return apiKeyTable(new Map());
}
