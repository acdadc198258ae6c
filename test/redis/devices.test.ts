// Paired devices across processes: two gateways, each with its own Redis connection, share the
// device store in Redis; a device paired on one works on the other, and revoking it on one
// closes its socket on the other with 4401 (docs/PROTOCOL.md §16).
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisDeviceStore } from "chat-gateway/redis";
import { Client } from "../gateway/harness.js";
import { bearer, HASHES, login, request, startStack, tempDir, writeUsers, type Stack } from "../http/helpers.js";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("redis devices");
const JSON_TYPE = { "content-type": "application/json" };

describe.skipIf(!available)("paired devices through Redis", () => {
  let prefix: string;
  let redisA: Redis;
  let redisB: Redis;
  let dir: string;
  let cleanup: () => Promise<void>;
  const stacks: Stack[] = [];
  const clients: Client[] = [];
  beforeEach(async () => {
    prefix = `t:${runId()}:`;
    redisA = new Redis(REDIS_URL);
    redisB = new Redis(REDIS_URL);
    ({ dir, cleanup } = await tempDir());
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate();
    for (const s of stacks.splice(0)) await s.close();
    await dropKeys(redisA, prefix);
    redisA.disconnect();
    redisB.disconnect();
    await cleanup();
  });

  async function pairOn(stack: Stack, session: string, name: string): Promise<{ device_id: string; token: string }> {
    const code = await request(stack.srv.url, {
      method: "POST",
      path: "/api/devices/pair",
      headers: { ...JSON_TYPE, ...bearer(session) },
      body: "{}",
    });
    const done = await request(stack.srv.url, {
      method: "POST",
      path: "/api/devices/redeem",
      headers: JSON_TYPE,
      body: JSON.stringify({ code: code.body.code, device_name: name, confirm: true }),
    });
    expect(done.status).toBe(200);
    return done.body;
  }

  it("a device paired on one gateway works on the other; revoking it on one closes its socket on the other with 4401", async () => {
    const usersFile = path.join(dir, "users.json");
    await writeUsers(usersFile, { alice: HASHES["alice-password"] });
    const a = await startStack({ usersFile, devices: redisDeviceStore(redisA, { prefix }) });
    const b = await startStack({ usersFile, devices: redisDeviceStore(redisB, { prefix }) });
    stacks.push(a, b);
    const session = (await login(a.srv.url, "alice", "alice-password")).body.token as string;
    const phone = await pairOn(a, session, "phone");
    const laptop = await pairOn(a, session, "laptop");
    const onB = await Client.connect(b.ws, {}, bearer(phone.token));
    const laptopOnB = await Client.connect(b.ws, {}, bearer(laptop.token));
    clients.push(onB, laptopOnB);
    // A publishes once Redis counts B's subscriber on the channel (`<prefix>device-revocations`).
    const subscribers = async () =>
      Number(((await redisA.pubsub("NUMSUB", `${prefix}device-revocations`)) as [string, number])[1]);
    while ((await subscribers()) < 1) await new Promise((resolve) => setTimeout(resolve, 10));
    const gone = await request(a.srv.url, {
      method: "DELETE",
      path: `/api/devices/${phone.device_id}`,
      headers: bearer(session),
    });
    expect(gone.status).toBe(200);
    // Waits on the close itself: the test's timeout is the only limit.
    expect(await onB.closedPromise).toBe(4401);
    expect((await request(b.srv.url, { path: "/api/devices", headers: bearer(phone.token) })).status).toBe(401);
    expect((await laptopOnB.request("channel.list")).type).toBe("channel.list");
    const listed = await request(b.srv.url, { path: "/api/devices", headers: bearer(laptop.token) });
    expect(listed.body.devices.map((d: { name: string }) => d.name)).toEqual(["laptop"]);
    const keys = await redisA.keys(`${prefix}*`);
    for (const key of keys)
      expect(JSON.stringify((await redisA.type(key)) === "hash" ? await redisA.hgetall(key) : {})).not.toContain(
        laptop.token,
      );
  });
});
