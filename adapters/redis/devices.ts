import type { DeviceTokenStore, StoredDevice } from "chat-gateway/devices";
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
    ...(fields.paired_by ? { paired_by: fields.paired_by } : {}),
    token_sha256: digest,
  };
}

/**
 * KEYS: the device's hash, its user's index, the id index. ARGV: device id, digest, cap (0: none),
 * parent id ("" for none), the device key prefix, then the hash's fields and values. The cap, the
 * parent's presence and the writes are one step, so two pairings at once cannot pass the cap
 * together and a child cannot be stored after its parent's revocation.
 */
const ADD = `
if tonumber(ARGV[3]) > 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then return 'full' end
if ARGV[4] ~= '' then
  local parent = redis.call('HGET', KEYS[2], ARGV[4])
  if not parent or redis.call('EXISTS', ARGV[5] .. parent) == 0 then return 'orphan' end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return 'added'`;

/**
 * KEYS: the user's index, the id index. ARGV: device id, the device key prefix, the revocation
 * channel. Removes the device and every device it paired, transitively, in one step, publishes
 * each digest, and returns [digest, fields] of each, the named one first.
 */
const REMOVE = `
local ids = {ARGV[1]}
local out = {}
local all = redis.call('HGETALL', KEYS[1])
local i = 1
while i <= #ids do
  local digest = redis.call('HGET', KEYS[1], ids[i])
  if digest then
    local fields = redis.call('HGETALL', ARGV[2] .. digest)
    if #fields > 0 then table.insert(out, {digest, fields}) end
    for j = 1, #all, 2 do
      if redis.call('HGET', ARGV[2] .. all[j + 1], 'paired_by') == ids[i] then table.insert(ids, all[j]) end
    end
    redis.call('DEL', ARGV[2] .. digest)
    redis.call('HDEL', KEYS[1], ids[i])
    redis.call('HDEL', KEYS[2], ids[i])
    redis.call('PUBLISH', ARGV[3], digest)
  end
  i = i + 1
end
return out`;

/** KEYS: the id index. ARGV: device id, the device key prefix, now. Only a device still stored is touched: a revoked one stays gone. */
const TOUCH = `
local digest = redis.call('HGET', KEYS[1], ARGV[1])
if digest and redis.call('EXISTS', ARGV[2] .. digest) == 1 then
  redis.call('HSET', ARGV[2] .. digest, 'last_seen', ARGV[3])
end
return 0`;

/** A Redis reply of field, value, field, value… as an object. */
function fieldsOf(flat: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  return fields;
}

/**
 * A `DeviceTokenStore` on Redis (docs/PROTOCOL.md §16), for several gateway processes: a device
 * paired on one works on every other, and a device revoked on one closes its connections on all.
 * Each device is a hash under the SHA-256 of its token (never the token), each user has a hash of
 * device id to digest. Adding (with the cap and the parent check), removing a device with the
 * devices it paired, and touching are each one Lua script: atomic across processes. A revoked device's digest is published on `<prefix>device-revocations`;
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
    async add(d, maxPerUser) {
      const { token_sha256: digest, paired_by, ...fields } = d;
      const flat = Object.entries({ ...fields, created: String(fields.created), last_seen: String(fields.last_seen) });
      if (paired_by !== undefined) flat.push(["paired_by", paired_by]);
      return (await redis.eval(
        ADD,
        3,
        deviceKey(digest),
        userKey(d.username),
        idsKey,
        d.device_id,
        digest,
        String(maxPerUser ?? 0),
        paired_by ?? "",
        deviceKey(""),
        ...flat.flat(),
      )) as "added" | "full" | "orphan";
    },
    find: get,
    async touch(id, now) {
      await redis.eval(TOUCH, 1, idsKey, id, deviceKey(""), String(now));
    },
    list,
    async remove(username, id) {
      const gone = (await redis.eval(REMOVE, 2, userKey(username), idsKey, id, deviceKey(""), channel)) as Array<
        [string, string[]]
      >;
      return gone
        .map(([digest, flat]) => parse(digest, fieldsOf(flat)))
        .filter((x): x is StoredDevice => x !== undefined);
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
