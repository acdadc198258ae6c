import type { DeviceTokenStore, StoredDevice } from "chat-gateway/http";
import { checkRedis, isCluster, type RedisClient } from "./options.js";
import { revocationChannel } from "./revocation-channel.js";

/** Options of {@link redisDeviceStore}. */
export interface RedisDeviceStoreOptions {
  /** Prefix of every key (default `chat-gateway:`). */
  prefix?: string;
}

function parse(digest: string, fields: Record<string, string>): StoredDevice | undefined {
  if (fields.device_id === undefined || fields.username === undefined) return undefined;
  return {
    device_id: fields.device_id,
    username: fields.username,
    name: fields.name ?? "",
    created: Number(fields.created),
    last_seen: Number(fields.last_seen),
    token_sha256: digest,
  };
}

/**
 * A `DeviceTokenStore` on Redis (docs/PROTOCOL.md §16), for several gateway processes: a device
 * paired on one works on every other, and a device revoked on one closes its connections on all.
 * Each device is a hash under the SHA-256 of its token (never the token), each user has a hash of
 * device id to digest. A revoked device's digest is published on `<prefix>device-revocations`;
 * `onRevocation` listens on a duplicate connection of its own. Give it to
 * `createLoginProtection({ devices })`.
 *
 * @throws {TypeError} when `redis` is not an ioredis client
 */
export function redisDeviceStore(redis: RedisClient, options: RedisDeviceStoreOptions = {}): DeviceTokenStore {
  const prefix = checkRedis("redisDeviceStore", redis, options.prefix);
  // A removal touches a device and its user's index: on a cluster they share one hash tag (one slot).
  const keys = isCluster(redis) ? `${prefix}{devices}:` : prefix;
  const deviceKey = (digest: string) => `${keys}device:${digest}`;
  const userKey = (username: string) => `${keys}user-devices:${username}`;
  const idsKey = `${keys}device-ids`;
  const channel = `${prefix}device-revocations`;

  async function get(digest: string): Promise<StoredDevice | undefined> {
    return parse(digest, await redis.hgetall(deviceKey(digest)));
  }

  async function list(username: string): Promise<StoredDevice[]> {
    const digests = Object.values(await redis.hgetall(userKey(username)));
    const devices = (await Promise.all(digests.map(get))).filter((d): d is StoredDevice => d !== undefined);
    return devices.sort((a, b) => a.created - b.created);
  }

  async function drop(devices: StoredDevice[]): Promise<void> {
    if (devices.length === 0) return;
    const multi = redis.multi();
    for (const d of devices) {
      multi
        .del(deviceKey(d.token_sha256))
        .hdel(userKey(d.username), d.device_id)
        .hdel(idsKey, d.device_id)
        .publish(channel, d.token_sha256);
    }
    await multi.exec();
  }

  return {
    async add(d) {
      const { token_sha256: digest, ...fields } = d;
      await redis
        .multi()
        .hset(deviceKey(digest), { ...fields, created: String(fields.created), last_seen: String(fields.last_seen) })
        .hset(userKey(d.username), d.device_id, digest)
        .hset(idsKey, d.device_id, digest)
        .exec();
    },
    find: get,
    async touch(id, now) {
      const digest = await redis.hget(idsKey, id);
      // Only an existing device: a touch racing a revocation must not bring a bare hash back.
      if (digest !== null && (await redis.exists(deviceKey(digest))) === 1)
        await redis.hset(deviceKey(digest), "last_seen", String(now));
    },
    list,
    async remove(username, id) {
      const digest = await redis.hget(userKey(username), id);
      const found = digest === null ? undefined : await get(digest);
      if (found !== undefined) await drop([found]);
      return found;
    },
    async removeUser(username) {
      const devices = await list(username);
      await drop(devices);
      await redis.del(userKey(username));
      return devices;
    },
    // Only a token digest revokes a device: anything else on the channel is dropped.
    onRevocation: revocationChannel(redis, channel, (digest) => (/^[0-9a-f]{64}$/.test(digest) ? digest : undefined)),
  };
}
