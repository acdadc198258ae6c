// POST /api/hooks/<id> through createHookHandler on a real node:http server in front of a real
// gateway: signatures (valid, wrong, missing, stale, replayed, another hook's secret),
// idempotency, the body and rate limits, and both modes, with what lands in history and outbox.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type AgentRuntime } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { addHook, createHookHandler, listHooks, removeHook, rotateHook, signHookBody } from "chat-gateway/hooks";
import { startGateway, type Harness } from "../gateway/harness.js";
import { request } from "../http/helpers.js";

let h: Harness | undefined;
let web: http.Server | undefined;
afterEach(async () => {
  web?.closeAllConnections();
  await new Promise((r) => (web ? web.close(r) : r(undefined)));
  await h?.close();
  h = web = undefined;
});

const owner = ANONYMOUS_OWNER;

async function setup(runtime?: AgentRuntime) {
  h = await startGateway(runtime ? { runtime } : {});
  const gateway = h.gateway;
  const errors: unknown[] = [];
  const hooks = createHookHandler({ gateway, onError: (e) => errors.push(e) });
  web = http.createServer((req, res) => void hooks(req, res).then((handled) => handled || res.writeHead(418).end()));
  await new Promise<void>((r) => web!.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  const storage = gateway.options.storage as Storage;
  function post(hookId: string, body: string | Buffer, headers: Record<string, string> = {}, localAddress?: string) {
    return request(base, {
      method: "POST",
      path: `/api/hooks/${hookId}`,
      headers: { "content-type": "application/json", ...headers },
      body,
      ...(localAddress ? { localAddress } : {}),
    });
  }
  function signed(hookId: string, secret: string, payload: unknown, headers: Record<string, string> = {}, t?: number) {
    const body = JSON.stringify(payload);
    return post(hookId, body, { "x-hook-signature": signHookBody(secret, body, t), ...headers });
  }
  async function lane(chatId: string) {
    return (await storage.history(owner, { chat_id: chatId, thread_id: null, limit: 100 }))!.messages;
  }
  async function frames(type: string) {
    return (await storage.readOutbox(owner, 0, 1000)).filter((f) => f.type === type).map((f) => f.payload);
  }
  return { gateway, storage, post, signed, lane, frames, errors };
}

describe("webhooks", () => {
  it("a signed post lands as an assistant message in the automation channel, with a cron notification", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    expect(hook.hook_id).toMatch(/^hk_[0-9a-f]{48}$/);
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    const reply = await t.signed(hook.hook_id, secret, { text: "build 41 passed", title: "CI" });
    expect(reply.status).toBe(202);
    const messages = await t.lane(hook.chat_id);
    expect(messages.map((m) => [m.role, m.text, m.status, m.message_id])).toEqual([
      ["assistant", "build 41 passed", "complete", reply.body.message_id],
    ]);
    const channel = (await t.gateway.channels.list(owner)).find((c) => c.chat_id === hook.chat_id)!;
    expect(channel).toMatchObject({ name: "Builds", automation: true });
    expect(await t.frames("notification")).toEqual([
      expect.objectContaining({ kind: "cron", title: "CI", body: "build 41 passed", chat_id: hook.chat_id }),
    ]);
    // The secret is never listed.
    expect(JSON.stringify(await listHooks(t.gateway, owner))).not.toContain(secret);
  });

  it("answers 401 alike for a wrong, missing, stale or foreign signature, 404 for an unknown hook, and posts nothing", async () => {
    const t = await setup();
    const a = await addHook(t.gateway, owner, { name: "a", channel: "A" });
    const b = await addHook(t.gateway, owner, { name: "b", channel: "B" });
    const body = JSON.stringify({ text: "hi" });
    const now = Math.floor(Date.now() / 1000);
    const replies = [
      await t.post(a.hook.hook_id, body, { "x-hook-signature": signHookBody(`${a.secret}x`, body) }),
      await t.post(a.hook.hook_id, body),
      await t.post(a.hook.hook_id, body, { "x-hook-signature": "t=1,v1=zz" }),
      await t.post(a.hook.hook_id, body, { "x-hook-signature": signHookBody(a.secret, body, now - 301) }),
      await t.post(a.hook.hook_id, body, { "x-hook-signature": signHookBody(a.secret, body, now + 301) }),
      await t.post(a.hook.hook_id, body, { "x-hook-signature": signHookBody(b.secret, body) }),
      // Signed over another body.
      await t.post(a.hook.hook_id, body, {
        "x-hook-signature": signHookBody(a.secret, JSON.stringify({ text: "other" })),
      }),
    ];
    expect(replies.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401, 401]);
    expect(new Set(replies.map((r) => r.text)).size).toBe(1);
    const unknown = [
      await t.post(`hk_${"0".repeat(48)}`, body, { "x-hook-signature": signHookBody(a.secret, body) }),
      await t.post("nope", body),
    ];
    expect(unknown.map((r) => r.status)).toEqual([404, 404]);
    expect(unknown[0].text).toBe(unknown[1].text);
    expect(await t.lane(a.hook.chat_id)).toEqual([]);
    expect(await t.frames("notification")).toEqual([]);
    // Within the window, the tolerance accepts a clock a little off.
    expect(
      (await t.post(a.hook.hook_id, body, { "x-hook-signature": signHookBody(a.secret, body, now - 250) })).status,
    ).toBe(202);
  });

  it("refuses a replayed signature with 409 and posts once", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    const body = JSON.stringify({ text: "once" });
    const header = { "x-hook-signature": signHookBody(secret, body) };
    expect((await t.post(hook.hook_id, body, header)).status).toBe(202);
    const again = await t.post(hook.hook_id, body, header);
    expect(again.status).toBe(409);
    expect((await t.lane(hook.chat_id)).map((m) => m.text)).toEqual(["once"]);
  });

  it("a captured request replayed 100 times spends none of the hook's minute: the replayer gets 409 then 429, the real sender 202", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    const body = JSON.stringify({ text: "captured" });
    const header = { "x-hook-signature": signHookBody(secret, body) };
    expect((await t.post(hook.hook_id, body, header, "127.0.0.2")).status).toBe(202);
    const replays: number[] = [];
    for (let i = 0; i < 100; i++) replays.push((await t.post(hook.hook_id, body, header, "127.0.0.2")).status);
    // Refusals are counted per address: 30 answers of 409, then the replaying address is shed.
    expect(replays.slice(0, 30)).toEqual(Array(30).fill(409));
    expect(replays.slice(30)).toEqual(Array(70).fill(429));
    // The real sender, from its own address, still has its minute: 59 more fit.
    const statuses: number[] = [];
    for (let i = 0; i < 59; i++) statuses.push((await t.signed(hook.hook_id, secret, { text: `real ${i}` })).status);
    expect(statuses).toEqual(Array(59).fill(202));
    expect((await t.signed(hook.hook_id, secret, { text: "over" })).status).toBe(429);
    expect(await t.lane(hook.chat_id)).toHaveLength(60);
  });

  it("wrong signatures from one address get it 429 after 30, and another address is still served", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    const body = JSON.stringify({ text: "guess" });
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++)
      statuses.push(
        (await t.post(hook.hook_id, body, { "x-hook-signature": signHookBody("whsec_x", body) }, "127.0.0.3")).status,
      );
    expect(statuses).toEqual([...Array(30).fill(401), 429]);
    // Shed before the signature is read: even a correct one from that address waits its minute.
    expect(
      (await t.post(hook.hook_id, body, { "x-hook-signature": signHookBody(secret, body) }, "127.0.0.3")).status,
    ).toBe(429);
    expect((await t.signed(hook.hook_id, secret, { text: "fine" })).status).toBe(202);
  });

  it("refuses text no storage can keep (a lone surrogate, U+0000) with 400 and posts nothing", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    expect((await t.signed(hook.hook_id, secret, { text: "half \ud83d" })).status).toBe(400);
    expect((await t.signed(hook.hook_id, secret, { text: "ok", title: "\ude00" })).status).toBe(400);
    expect((await t.signed(hook.hook_id, secret, { text: "a\u0000b" })).status).toBe(400);
    expect(await t.lane(hook.chat_id)).toEqual([]);
  });

  it("an Idempotency-Key repeat answers the first message_id and posts nothing; another key posts", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    const first = await t.signed(hook.hook_id, secret, { text: "deploy" }, { "idempotency-key": "run-7" });
    // A fresh signature (a new t) with the same key, and the very same request resent.
    const second = await t.signed(
      hook.hook_id,
      secret,
      { text: "deploy" },
      { "idempotency-key": "run-7" },
      Math.floor(Date.now() / 1000) - 5,
    );
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(second.body.message_id).toBe(first.body.message_id);
    const other = await t.signed(
      hook.hook_id,
      secret,
      { text: "deploy" },
      { "idempotency-key": "run-8" },
      Math.floor(Date.now() / 1000) - 6,
    );
    expect(other.status).toBe(202);
    expect(other.body.message_id).not.toBe(first.body.message_id);
    expect((await t.lane(hook.chat_id)).map((m) => m.message_id)).toEqual([
      first.body.message_id,
      other.body.message_id,
    ]);
  });

  it("refuses a body over 64 KiB with 413 and a 61st post within a minute with 429", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    const big = JSON.stringify({ text: "x".repeat(64 * 1024) });
    expect((await t.post(hook.hook_id, big, { "x-hook-signature": signHookBody(secret, big) })).status).toBe(413);
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await t.signed(hook.hook_id, secret, { text: `n${i}` })).status);
    expect(statuses.slice(0, 60).every((s) => s === 202)).toBe(true);
    const last = await t.signed(hook.hook_id, secret, { text: "over" });
    expect(last.status).toBe(429);
    expect(Number(last.headers["retry-after"])).toBeGreaterThan(0);
    expect(await t.lane(hook.chat_id)).toHaveLength(60);
    // Another hook has a budget of its own.
    const other = await addHook(t.gateway, owner, { name: "other", channel: "Builds" });
    expect((await t.signed(other.hook.hook_id, other.secret, { text: "fine" })).status).toBe(202);
  });

  it("mode turn stores the body as the prompt and answers it in the channel", async () => {
    const t = await setup();
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ask", channel: "Digest", mode: "turn" });
    const reply = await t.signed(hook.hook_id, secret, { text: "summarise" });
    expect(reply.status).toBe(202);
    const messages = await t.lane(hook.chat_id);
    expect(messages.map((m) => [m.role, m.text, m.status])).toEqual([
      ["user", "summarise", undefined],
      ["assistant", "You said: summarise", "complete"],
    ]);
    expect(messages[1]).toMatchObject({ message_id: reply.body.message_id, reply_to: messages[0].message_id });
    expect(await t.frames("notification")).toEqual([expect.objectContaining({ kind: "cron", chat_id: hook.chat_id })]);
  });

  it("a failing turn stores an answer with status error saying why", async () => {
    const failing: AgentRuntime = {
      async *turn() {
        yield { type: "text", delta: "start" };
        throw new Error("upstream 503");
      },
    };
    const t = await setup(failing);
    const { hook, secret } = await addHook(t.gateway, owner, { name: "ask", channel: "Digest", mode: "turn" });
    const reply = await t.signed(hook.hook_id, secret, { text: "go" });
    expect(reply.status).toBe(202);
    const answer = (await t.lane(hook.chat_id)).find((m) => m.message_id === reply.body.message_id)!;
    expect(answer.status).toBe("error");
    expect(answer.text + JSON.stringify(answer)).toContain("upstream 503");
  });

  it("rotate gives a new id and secret and retires the old; remove answers 404", async () => {
    const t = await setup();
    const old = await addHook(t.gateway, owner, { name: "ci", channel: "Builds" });
    const rotated = await rotateHook(t.gateway, owner, "ci");
    expect(rotated.hook.hook_id).not.toBe(old.hook.hook_id);
    expect((await t.signed(old.hook.hook_id, old.secret, { text: "old" })).status).toBe(404);
    expect((await t.signed(rotated.hook.hook_id, old.secret, { text: "old secret" })).status).toBe(401);
    expect((await t.signed(rotated.hook.hook_id, rotated.secret, { text: "new" })).status).toBe(202);
    await removeHook(t.gateway, owner, "ci");
    expect((await t.signed(rotated.hook.hook_id, rotated.secret, { text: "gone" })).status).toBe(404);
    expect(await listHooks(t.gateway, owner)).toEqual([]);
    expect(t.errors).toEqual([]);
  });
});
