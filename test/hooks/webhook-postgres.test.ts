// Two gateways on one PostgreSQL database (as two processes are), each with its hook route: a
// signature and an Idempotency-Key are claimed once across both, so a post lands once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, createGateway, type Gateway } from "chat-gateway";
import { addHook, createHookHandler, signHookBody } from "chat-gateway/hooks";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { request } from "../http/helpers.js";

const available = await postgresAvailable("webhooks on postgres");
const schema = `t_${runId()}`;
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await dropSchema(schema);
});

/** One "process": its own pool, gateway and HTTP server. */
async function node(): Promise<{ gateway: Gateway; base: string }> {
  const storage = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 });
  const gateway = createGateway({
    storage,
    hookStore: storage,
    runtime: demoRuntime({ delayMs: 0 }),
    logger: { info() {}, warn() {}, error() {} },
  });
  await gateway.start();
  const hooks = createHookHandler({ gateway });
  const web = http.createServer(
    (req, res) => void hooks(req, res).then((handled) => handled || res.writeHead(418).end()),
  );
  await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
  stops.push(async () => {
    web.closeAllConnections();
    await new Promise((r) => web.close(r));
    await gateway.close();
  });
  return { gateway, base: `http://127.0.0.1:${(web.address() as AddressInfo).port}` };
}

describe.skipIf(!available)("webhooks across processes on PostgreSQL", () => {
  it("the same signed request to both lands once; an Idempotency-Key answers the first message_id on the other", async () => {
    const a = await node();
    const b = await node();
    const { hook, secret } = await addHook(a.gateway, ANONYMOUS_OWNER, { name: "ci", channel: "Builds" });
    const body = JSON.stringify({ text: "once" });
    const headers = { "content-type": "application/json", "x-hook-signature": signHookBody(secret, body) };
    const both = await Promise.all(
      [a, b].map((n) => request(n.base, { method: "POST", path: `/api/hooks/${hook.hook_id}`, headers, body })),
    );
    expect(both.map((r) => r.status).sort()).toEqual([202, 409]);

    const keyed = (n: { base: string }, t: number) => {
      const text = JSON.stringify({ text: "keyed" });
      return request(n.base, {
        method: "POST",
        path: `/api/hooks/${hook.hook_id}`,
        headers: {
          "content-type": "application/json",
          "idempotency-key": "run-1",
          "x-hook-signature": signHookBody(secret, text, t),
        },
        body: text,
      });
    };
    const now = Math.floor(Date.now() / 1000);
    const first = await keyed(a, now - 1);
    const second = await keyed(b, now - 2);
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(second.body.message_id).toBe(first.body.message_id);
    const page = await b.gateway.options.storage.history(ANONYMOUS_OWNER, {
      chat_id: hook.chat_id,
      thread_id: null,
      limit: 10,
    });
    expect(page!.messages.map((m) => m.text)).toEqual(["once", "keyed"]);
  });
});
