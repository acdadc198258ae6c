// The 60 posts a minute per webhook held across processes (docs/PROTOCOL.md §17): two hook
// handlers, as two gateway processes would run them, each with its own Redis connection and one
// prefix, in front of one gateway; and the budget alone, window and per-hook counts.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { addHook, createHookHandler, signHookBody } from "chat-gateway/hooks";
import { redisHookBudget } from "chat-gateway/redis";
import { startGateway, type Harness } from "../gateway/harness.js";
import { request } from "../http/helpers.js";
import { REDIS_URL, dropKeys, redisAvailable, runId } from "../fixtures/services.js";

const available = await redisAvailable("hook budget on Redis");
const prefix = `t:${runId()}:`;
const clients: Redis[] = [];
const servers: http.Server[] = [];
let h: Harness | undefined;
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await h?.close();
  h = undefined;
  if (clients[0]) await dropKeys(clients[0], prefix);
  for (const c of clients.splice(0)) c.disconnect();
});

function client(): Redis {
  const redis = new Redis(REDIS_URL);
  clients.push(redis);
  return redis;
}

describe.runIf(available)("redisHookBudget", () => {
  it("counts each hook's posts in one sliding window across connections", async () => {
    const a = redisHookBudget(client(), { prefix, limit: 3, windowMs: 10_000 });
    const b = redisHookBudget(client(), { prefix, limit: 3, windowMs: 10_000 });
    const t = 1_800_000_000_000;
    expect([await a.take("h1", t), await b.take("h1", t + 1), await a.take("h1", t + 2)]).toEqual([0, 0, 0]);
    expect(await b.take("h1", t + 3)).toBe(10);
    expect(await a.take("h2", t + 3)).toBe(0);
    // The first post leaves the window 10 s after it: room for exactly one more.
    expect(await b.take("h1", t + 10_000)).toBe(0);
    expect(await a.take("h1", t + 10_000)).toBe(1);
    expect(() => redisHookBudget(client(), { limit: 0 })).toThrow(TypeError);
  });

  it("two handlers sharing Redis refuse the 61st post of a minute to one hook with 429, whichever takes it", {
    timeout: 60_000,
  }, async () => {
    h = await startGateway();
    const gateway = h.gateway;
    const bases: string[] = [];
    for (let i = 0; i < 2; i++) {
      const hooks = createHookHandler({ gateway, postBudget: redisHookBudget(client(), { prefix }) });
      const server = http.createServer(
        (req, res) => void hooks(req, res).then((handled) => handled || res.writeHead(418).end()),
      );
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      bases.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    }
    const { hook, secret } = await addHook(gateway, ANONYMOUS_OWNER, { name: "ci", channel: "Builds" });
    const post = (base: string, n: number) => {
      const body = JSON.stringify({ text: `post ${n}` });
      return request(base, {
        method: "POST",
        path: `/api/hooks/${hook.hook_id}`,
        headers: { "content-type": "application/json", "x-hook-signature": signHookBody(secret, body) },
        body,
      });
    };
    const statuses: number[] = [];
    for (let n = 0; n < 60; n++) statuses.push((await post(bases[n % 2]!, n)).status);
    expect(statuses.every((s) => s === 202)).toBe(true);
    const over = await Promise.all([post(bases[0]!, 60), post(bases[1]!, 61)]);
    expect(over.map((r) => r.status)).toEqual([429, 429]);
    expect(Number(over[0]!.headers["retry-after"])).toBeGreaterThan(0);
  });
});
