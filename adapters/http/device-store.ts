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
  /**
   * The `device_id` of the paired device whose token asked for the pairing code; absent when a
   * login session did. Revoking that device revokes this one too (docs/PROTOCOL.md §16).
   */
  paired_by?: string;
}

/** A paired device with the SHA-256 hex of its token: what a store keeps (never the token). */
export interface StoredDevice extends PairedDevice {
  token_sha256: string;
}

/** What {@link DeviceTokenStore.add} did: `added`; `full`, the user has `maxPerUser` devices; `orphan`, its `paired_by` device is gone. */
export type DeviceAddOutcome = "added" | "full" | "orphan";

/**
 * Keeps paired devices. Only the SHA-256 of a device token is stored, so a copy of the store lets
 * nobody in. Every method may be called concurrently, also by several processes sharing the store;
 * each change is one atomic step on the store's current content, so no change undoes another (a
 * revocation is never undone by a `touch` or an `add` made at the same moment). Times are Unix seconds.
 */
export interface DeviceTokenStore {
  /**
   * Stores a newly paired device, in one atomic step with two checks: the user has fewer than
   * `maxPerUser` devices (else `full`, nothing stored), and the device named by `paired_by`, if
   * any, is still stored (else `orphan`, nothing stored: its parent was revoked meanwhile).
   * @param maxPerUser devices a user may have; absent, no cap
   */
  add(device: StoredDevice, maxPerUser?: number): Promise<DeviceAddOutcome>;
  /** The device whose token has this SHA-256 hex, or undefined. Must not wait for a change being written. */
  find(tokenSha256: string): Promise<StoredDevice | undefined>;
  /** Records a use of a device: its `last_seen` becomes `now`. Unknown ids are ignored: a revoked device stays revoked. */
  touch(deviceId: string, now: number): Promise<void>;
  /** The devices of a user, oldest first. */
  list(username: string): Promise<StoredDevice[]>;
  /**
   * Forgets one device of a user and, in the same step, every device it paired, transitively
   * (`paired_by`). Returns them, the named device first; empty when the user has no such device.
   */
  remove(username: string, deviceId: string): Promise<StoredDevice[]>;
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

/**
 * A new device id: 96 random bits as base64url (16 characters), never starting with `-`, which a
 * command line would take for an option (`device revoke alice -2jq…`). Drawing again costs a
 * 64th of a bit.
 */
export function createDeviceId(): string {
  for (;;) {
    const id = randomBytes(12).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

/** The SHA-256 hex of a device token: the only form a store keeps, and the id revocations carry. */
export function deviceTokenDigest(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Devices a user may have paired at once by default (option `maxDevicesPerUser`, docs/PROTOCOL.md §16). */
export const MAX_DEVICES_PER_USER = 50;

/** The device `root` and every device it paired, transitively, from the devices of its user; `root` first. */
export function withDescendants<D extends PairedDevice>(root: D, devices: readonly D[]): D[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) {
    const parent = out[i]!.device_id;
    for (const d of devices) if (d.paired_by === parent && !out.includes(d)) out.push(d);
  }
  return out;
}

/** The common operations over a table of devices keyed by token digest; each is one synchronous step. */
export function deviceTable(table: Map<string, StoredDevice>): Omit<DeviceTokenStore, "onRevocation"> {
  const byId = (username: string | undefined, id: string) =>
    [...table.values()].find((d) => d.device_id === id && (username === undefined || d.username === username));
  const ofUser = (username: string) => [...table.values()].filter((d) => d.username === username);
  return {
    async add(device, maxPerUser) {
      if (maxPerUser !== undefined && ofUser(device.username).length >= maxPerUser) return "full";
      if (device.paired_by !== undefined && byId(device.username, device.paired_by) === undefined) return "orphan";
      table.set(device.token_sha256, { ...device });
      return "added";
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
      if (found === undefined) return [];
      const gone = withDescendants(found, ofUser(username));
      for (const d of gone) table.delete(d.token_sha256);
      return gone;
    },
    async removeUser(username) {
      const gone = ofUser(username);
      for (const d of gone) table.delete(d.token_sha256);
      return gone;
    },
  };
}

/** A {@link DeviceTokenStore} in this process's memory: paired devices end with the process. */
export function memoryDeviceStore(): DeviceTokenStore {
  return deviceTable(new Map());
}

/**
 * The session a device token stands for, or undefined when no device has it or it went unused
 * for 90 days (it is then revoked, with the devices it paired, each handed to `revoked`). A use is
 * recorded at most once an hour, and the session expires 90 days after it: a device token is not
 * ended by the 24-hour session expiry.
 */
export async function deviceSession(
  devices: DeviceTokenStore,
  token: string,
  now: number,
  revoked: (gone: StoredDevice[]) => void = () => {},
): Promise<Session | undefined> {
  const found = await devices.find(deviceTokenDigest(token));
  if (found === undefined) return undefined;
  if (found.last_seen + DEVICE_TOKEN_SECONDS <= now) {
    revoked(await devices.remove(found.username, found.device_id));
    return undefined;
  }
  if (now - found.last_seen >= DEVICE_TOUCH_SECONDS) await devices.touch(found.device_id, now);
  return { token, username: found.username, expires_at: Math.max(found.last_seen, now) + DEVICE_TOKEN_SECONDS };
}
