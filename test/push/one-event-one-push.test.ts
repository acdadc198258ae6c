// One event, one push (docs/PROTOCOL.md §15.2): with nobody connected, an automation post (a
// signed webhook post) or a scheduled run stores a message and raises a `cron` notification about
// it; each of the owner's push targets gets one push for the two, through the Web Push sender to a
// push service on https://127.0.0.1.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { addHook, createHookHandler, signHookBody } from "chat-gateway/hooks";
import { generateVapidKeys, webPushSender } from "chat-gateway/push/webpush";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { sleep } from "../gateway/runtimes.js";
import { request } from "../http/helpers.js";
import { fakePushService, subscriber, type FakePushService, type Subscriber } from "./fake-push-service.js";

const owner = ANONYMOUS_OWNER;
let h: Harness | undefined;
let service: FakePushService | undefined;
let web: http.Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (web ? web.close(resolve) : resolve(undefined)));
  await h?.close();
  await service?.close();
  h = service = web = undefined;
});

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1500 && !(await check()); i++) await sleep(10);
}

/** A gateway pushing through Web Push to a device that is not connected. */
async function setup(): Promise<{ harness: Harness; browser: Subscriber; titles: () => string[] }> {
  const push = await fakePushService();
  service = push;
  const sender = webPushSender({
    vapid: generateVapidKeys(),
    subject: "mailto:ops@example.com",
    agent: push.agent,
    endpointAllowed: () => true,
  });
  const harness = await startGateway({ push: [sender], scheduler: { tickMs: 100 } });
  h = harness;
  const browser = subscriber(`${push.url}/push/tab`);
  const tab = await Client.connect(harness.url, {
    device_id: "tab",
    caps: { push: "webpush" },
    webpush: browser.subscription,
  });
  await tab.close();
  const titles = () => push.requests.map((r) => JSON.parse(browser.decrypt(r.body)).title as string);
  return { harness, browser, titles };
}

/** Every push the event made: a later push, raised after it, has arrived first. */
async function pushesOf(harness: Harness, titles: () => string[]): Promise<string[]> {
  await harness.gateway.notify(owner, { kind: "generic", title: "marker", body: "after the event" });
  await until(() => titles().includes("marker"));
  await sleep(200);
  return titles().filter((t) => t !== "marker");
}

async function notifications(harness: Harness): Promise<unknown[]> {
  const storage = harness.gateway.options.storage as Storage;
  return (await storage.readOutbox(owner, 0, 1000)).filter((f) => f.type === "notification");
}

it("one push - a signed webhook post with nobody connected is pushed once to each target, not as message and notification", async () => {
  const { harness, titles } = await setup();
  const hooks = createHookHandler({ gateway: harness.gateway });
  web = http.createServer((req, res) => void hooks(req, res).then((handled) => handled || res.writeHead(418).end()));
  await new Promise<void>((resolve) => web!.listen(0, "127.0.0.1", resolve));
  const { hook, secret } = await addHook(harness.gateway, owner, { name: "ci", channel: "Builds" });
  const body = JSON.stringify({ text: "build 41 passed", title: "CI" });
  const reply = await request(`http://127.0.0.1:${(web.address() as AddressInfo).port}`, {
    method: "POST",
    path: `/api/hooks/${hook.hook_id}`,
    headers: { "content-type": "application/json", "x-hook-signature": signHookBody(secret, body) },
    body,
  });
  expect(reply.status).toBe(202);
  // Both were stored: the message and its notification.
  expect(await notifications(harness)).toHaveLength(1);
  expect(await pushesOf(harness, titles)).toHaveLength(1);
}, 60_000);

it("one push - a scheduled run's answer with nobody connected is pushed once to each target, not as answer and notification", async () => {
  const { harness, titles } = await setup();
  const channel = await harness.gateway.channels.create(owner, { name: "Reports", kind: "channel", automation: true });
  await harness.gateway.schedules.add(owner, {
    name: "digest",
    cron: "0 0 1 1 *",
    chat_id: channel.chat_id,
    prompt: "status please",
  });
  await harness.gateway.schedules.run(owner, "digest");
  await until(async () => (await notifications(harness)).length === 1);
  expect(await notifications(harness)).toHaveLength(1);
  expect(await pushesOf(harness, titles)).toHaveLength(1);
}, 60_000);
