/**
 * The `DeviceTokenStore` contract and its memory implementation: where paired devices and the
 * hashes of their tokens live (docs/PROTOCOL.md §16).
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import type { Session } from "chat-gateway";

/** A paired device as listed by `GET /api/devices` (docs/PROTOCOL.md §16); times in Unix seconds. */
export interface PairedDevice {
  device_id: string;
  username: string;
  name: string;
  created: number;
  last_seen: number;
}

/** A paired device with the SHA-256 hex of its token: what a store keeps (never the token). */
export interface StoredDevice extends PairedDevice {
  token_sha256: string;
}

/**
 * Keeps paired devices. Only the SHA-256 of a device token is stored, so a copy of the store lets
 * nobody in. Every method may be called concurrently; times are Unix seconds.
 */
export interface DeviceTokenStore {
  /** Stores a newly paired device. */
  add(device: StoredDevice): Promise<void>;
  /** The device whose token has this SHA-256 hex, or undefined. */
  find(tokenSha256: string): Promise<StoredDevice | undefined>;
  /** Records a use of a device: its `last_seen` becomes `now`. Unknown ids are ignored. */
  touch(deviceId: string, now: number): Promise<void>;
  /** The devices of a user, oldest first. */
  list(username: string): Promise<StoredDevice[]>;
  /** Forgets one device of a user; returns it, or undefined when the user has no such device. */
  remove(username: string, deviceId: string): Promise<StoredDevice | undefined>;
  /** Forgets every device of a user (removed, or given a new password); returns them. */
  removeUser(username: string): Promise<StoredDevice[]>;
  /**
   * Optional, for stores another process changes (the CLI, a second server): calls `listener`
   * with the token SHA-256 of each device revoked elsewhere. Returns the unsubscribe function.
   */
  onRevocation?(listener: (tokenSha256: string) => void): () => void;
}

/** How long a device token stays valid after its last use, in seconds (90 days). */
export const DEVICE_TOKEN_SECONDS = 90 * 86_400;
/** A device's `last_seen` is written at most this often, in seconds: a busy device costs no write per hello. */
export const DEVICE_TOUCH_SECONDS = 3_600;

/** A new device token: 256 random bits as base64url. */
export function createDeviceToken(): string {
  return randomBytes(32).toString("base64url");
}

/** A new device id: 96 random bits as base64url (16 characters). */
export function createDeviceId(): string {
  return randomBytes(12).toString("base64url");
}

/** The SHA-256 hex of a device token: the only form a store keeps, and the id revocations carry. */
export function deviceTokenDigest(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** The common operations over a table of devices keyed by token digest. */
export function deviceTable(
  table: Map<string, StoredDevice>,
): Omit<DeviceTokenStore, "add" | "onRevocation"> & { add(device: StoredDevice): void } {
  const byId = (username: string | undefined, id: string) =>
    [...table.values()].find((d) => d.device_id === id && (username === undefined || d.username === username));
  return {
    add(device) {
      table.set(device.token_sha256, { ...device });
    },
    async find(digest) {
      const found = table.get(digest);
      return found === undefined ? undefined : { ...found };
    },
    async touch(id, now) {
      const found = byId(undefined, id);
      if (found !== undefined) found.last_seen = now;
    },
    async list(username) {
      return [...table.values()]
        .filter((d) => d.username === username)
        .sort((a, b) => a.created - b.created)
        .map((d) => ({ ...d }));
    },
    async remove(username, id) {
      const found = byId(username, id);
      if (found !== undefined) table.delete(found.token_sha256);
      return found;
    },
    async removeUser(username) {
      const gone = [...table.values()].filter((d) => d.username === username);
      for (const d of gone) table.delete(d.token_sha256);
      return gone;
    },
  };
}

/** A {@link DeviceTokenStore} in this process's memory: paired devices end with the process. */
export function memoryDeviceStore(): DeviceTokenStore {
  const ops = deviceTable(new Map());
  return { ...ops, add: async (device) => ops.add(device) };
}

/**
 * The session a device token stands for, or undefined when no device has it or it went unused
 * for 90 days (it is then forgotten). A use is recorded at most once an hour, and the session
 * expires 90 days after it: a device token is not ended by the 24-hour session expiry.
 */
export async function deviceSession(
  devices: DeviceTokenStore,
  token: string,
  now: number,
): Promise<Session | undefined> {
  const found = await devices.find(deviceTokenDigest(token));
  if (found === undefined) return undefined;
  if (found.last_seen + DEVICE_TOKEN_SECONDS <= now) {
    await devices.remove(found.username, found.device_id);
    return undefined;
  }
  if (now - found.last_seen >= DEVICE_TOUCH_SECONDS) await devices.touch(found.device_id, now);
  return { token, username: found.username, expires_at: Math.max(found.last_seen, now) + DEVICE_TOKEN_SECONDS };
}
