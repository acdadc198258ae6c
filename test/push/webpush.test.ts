// Web Push (docs/PROTOCOL.md §16) through a real gateway: a browser's subscription enters by
// `hello` or `fcm.register`, the sender posts to a push service on https://127.0.0.1 with a test
// certificate, and the test decrypts what arrived with the browser's keys (RFC 8291) and checks
// the VAPID signature (RFC 8292). Bad subscriptions are refused where they enter.
import type { LookupFunction } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { CLOSE_CODES } from "chat-gateway/protocol";
import { generateVapidKeys, isPublicEndpoint, webPushSender } from "chat-gateway/push/webpush";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { sleep } from "../gateway/runtimes.js";
import { fakePushService, subscriber, vapidClaims, type FakePushService } from "./fake-push-service.js";

const VAPID = generateVapidKeys();
const SUBJECT = "mailto:ops@example.com";

let h: Harness | undefined;
let service: FakePushService | undefined;
afterEach(async () => {
  await h?.close();
  await service?.close();
  h = service = undefined;
});

async function setup(publicUrl?: string, allowedOrigins?: string[]) {
  service = await fakePushService();
  const storage = memoryStorage();
  const push = webPushSender({ vapid: VAPID, subject: SUBJECT, agent: service.agent, endpointAllowed: () => true });
  h = await startGateway(
    { storage, push: [push], pushRetry: { attempts: 1, backoffMs: 10 }, publicUrl },
    { allowedOrigins },
  );
  return { storage, service, h };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(10);
}

/** Notify the anonymous owner while no device is connected. */
function notify(harness: Harness, title = "Ping"): Promise<unknown> {
  return harness.gateway.notify(ANONYMOUS_OWNER, {
    kind: "approval",
    title,
    body: "Approve the deploy? ✔",
    chat_id: "default",
    thread_id: null,
  });
}

describe("web push", () => {
  it("web push - the payload carries the RFC 8030 declarative notification: its lane on the public URL, tagged by message", async () => {
    const { service, h } = await setup("https://chat.example.com/app/");
    const browser = subscriber(`${service.url}/push/decl`);
    await (
      await Client.connect(h.url, { device_id: "tab", caps: { push: "webpush" }, webpush: browser.subscription })
    ).close();
    await h.gateway.notify(ANONYMOUS_OWNER, {
      kind: "generic",
      title: "Done",
      body: "Build 42 is out",
      chat_id: "default",
      thread_id: "t 1",
      message_id: "m-42",
    });
    await until(() => service.requests.length === 1);
    expect(JSON.parse(browser.decrypt(service.requests[0].body))).toMatchObject({
      web_push: 8030,
      notification: {
        title: "Done",
        body: "Build 42 is out",
        navigate: "https://chat.example.com/app/?chat=default&thread=t+1",
        tag: "m-42",
      },
    });
  });

  it("web push - without a public URL a push leads to the origin the owner's devices last connected through", async () => {
    const { service, h } = await setup(undefined, ["https://phone.example.net"]);
    const browser = subscriber(`${service.url}/push/origin`);
    const tab = await Client.connect(
      h.url,
      { device_id: "tab", caps: { push: "webpush" }, webpush: browser.subscription },
      { origin: "https://phone.example.net" },
    );
    await tab.close();
    await notify(h);
    await until(() => service.requests.length === 1);
    const payload = JSON.parse(browser.decrypt(service.requests[0].body));
    expect(payload.notification.navigate).toBe("https://phone.example.net/?chat=default");
  });

  it("web push - a subscription from hello gets the notification, encrypted for the browser and signed with the VAPID key", async () => {
    const { service, h, storage } = await setup();
    const browser = subscriber(`${service.url}/push/abc`);
    const tab = await Client.connect(h.url, {
      device_id: "tab",
      caps: { push: "webpush" },
      webpush: { ...browser.subscription, expirationTime: null },
    });
    expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toEqual(browser.subscription);
    await tab.close();
    await notify(h);
    await until(() => service.requests.length === 1);
    const [request] = service.requests;
    expect(request.path).toBe("/push/abc");
    expect(request.headers).toMatchObject({ "content-encoding": "aes128gcm", ttl: "86400", urgency: "high" });
    expect(JSON.parse(browser.decrypt(request.body))).toEqual({
      kind: "notification",
      title: "Ping",
      body: "Approve the deploy? ✔",
      chat_id: "default",
      thread_id: null,
      notification_kind: "approval",
      web_push: 8030,
      notification: { title: "Ping", body: "Approve the deploy? ✔", navigate: "/?chat=default" },
    });
    const claims = vapidClaims(request.headers);
    expect(claims).toMatchObject({ aud: service.url, sub: SUBJECT, k: VAPID.publicKey });
    expect(claims.exp).toBeGreaterThan(Date.now() / 1000);
  });

  it("web push - fcm.register sets and null clears the subscription; a device declaring another channel is not pushed", async () => {
    const { service, h, storage } = await setup();
    const browser = subscriber(`${service.url}/push/tab`);
    const tab = await Client.connect(h.url, { device_id: "tab", caps: { push: "webpush" } });
    tab.send("fcm.register", { webpush: browser.subscription });
    expect((await tab.request("ping", {})).type).toBe("pong");
    expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toEqual(browser.subscription);
    const other = await Client.connect(h.url, {
      device_id: "other",
      caps: { push: "none" },
      webpush: subscriber(`${service.url}/push/other`).subscription,
    });
    await Promise.all([tab.close(), other.close()]);
    await notify(h, "first");
    await until(() => service.requests.length === 1);
    await sleep(100);
    expect(service.requests.map((r) => r.path)).toEqual(["/push/tab"]);
    const again = await Client.connect(h.url, { device_id: "tab", caps: { push: "webpush" } });
    expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toEqual(browser.subscription); // left out: kept
    again.send("fcm.register", { webpush: null });
    expect((await again.request("ping", {})).type).toBe("pong");
    expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toBeUndefined();
    await again.close();
    await notify(h, "second");
    await sleep(300);
    expect(service.requests).toHaveLength(1);
  });

  it.each([404, 410])(
    "web push - a push service answering %i removes the subscription, and nothing is posted to it again",
    async (status) => {
      const { service, h, storage } = await setup();
      service.answer("/push/gone", status);
      const gone = subscriber(`${service.url}/push/gone`);
      const kept = subscriber(`${service.url}/push/kept`);
      await (
        await Client.connect(h.url, { device_id: "gone", caps: { push: "webpush" }, webpush: gone.subscription })
      ).close();
      await (
        await Client.connect(h.url, { device_id: "kept", caps: { push: "webpush" }, webpush: kept.subscription })
      ).close();
      await notify(h, "first");
      await until(() => service.requests.length === 2);
      for (let i = 0; i < 200 && (await storage.getDevice(ANONYMOUS_OWNER, "gone"))?.webpush; i++) await sleep(10);
      expect((await storage.getDevice(ANONYMOUS_OWNER, "gone"))?.webpush).toBeUndefined();
      expect((await storage.getDevice(ANONYMOUS_OWNER, "kept"))?.webpush).toEqual(kept.subscription);
      await notify(h, "second");
      await until(() => service.requests.length === 3);
      await sleep(200);
      expect(service.requests.map((r) => r.path).sort()).toEqual(["/push/gone", "/push/kept", "/push/kept"]);
    },
  );

  it("web push - a subscription replaced while a push to the old one failed with 410 is kept", async () => {
    const { service, h, storage } = await setup();
    const old = subscriber(`${service.url}/push/old`);
    const fresh = subscriber(`${service.url}/push/fresh`);
    service.answer("/push/old", 410);
    await (
      await Client.connect(h.url, { device_id: "tab", caps: { push: "webpush" }, webpush: old.subscription })
    ).close();
    const sender = webPushSender({ vapid: VAPID, subject: SUBJECT, agent: service.agent, endpointAllowed: () => true });
    const device = (await storage.getDevice(ANONYMOUS_OWNER, "tab"))!;
    // What the gateway does after the 410, with the device re-subscribed meanwhile.
    await expect(
      sender.send(ANONYMOUS_OWNER, device, { kind: "notification", title: "t", body: "b" }),
    ).rejects.toMatchObject({ gone: true, permanent: true });
    const replaced = { ...device, webpush: fresh.subscription };
    expect(sender.forget!(replaced, device)).toBeUndefined();
    expect(sender.forget!(device, device)).not.toHaveProperty("webpush");
  });

  const endpoint = (path = "/push/x") => `https://push.example.com${path}`;
  const keys = subscriber(endpoint()).subscription.keys;
  const BAD: Array<[string, unknown, string]> = [
    ["an http: endpoint", { endpoint: "http://push.example.com/x", keys }, "webpush.endpoint"],
    ["an endpoint over 2048 characters", { endpoint: endpoint(`/${"a".repeat(2048)}`), keys }, "webpush.endpoint"],
    ["an endpoint that is no URL", { endpoint: "not a url", keys }, "webpush.endpoint"],
    ["an endpoint with credentials", { endpoint: "https://user:pw@push.example.com/x", keys }, "webpush.endpoint"],
    ["no endpoint", { keys }, "webpush.endpoint"],
    ["a string", "https://push.example.com/x", "webpush"],
    ["an array", [endpoint(), keys], "webpush"],
    ["no keys", { endpoint: endpoint() }, "webpush.keys"],
    [
      "a p256dh of the wrong length",
      { endpoint: endpoint(), keys: { ...keys, p256dh: keys.p256dh.slice(0, 40) } },
      "webpush.keys.p256dh",
    ],
    ["a huge p256dh", { endpoint: endpoint(), keys: { ...keys, p256dh: "A".repeat(100_000) } }, "webpush.keys.p256dh"],
    [
      "a compressed p256dh",
      { endpoint: endpoint(), keys: { ...keys, p256dh: Buffer.alloc(65, 2).toString("base64url") } },
      "webpush.keys.p256dh",
    ],
    [
      "an auth that is not base64url",
      { endpoint: endpoint(), keys: { ...keys, auth: "not base64 at all!!!!!" } },
      "webpush.keys.auth",
    ],
    [
      "an auth of 32 bytes",
      { endpoint: endpoint(), keys: { ...keys, auth: Buffer.alloc(32, 1).toString("base64url") } },
      "webpush.keys.auth",
    ],
  ];

  it.each(BAD)(
    "web push - hello with %s is refused with unsupported naming the field, closed 1008, nothing stored",
    async (_what, webpush, field) => {
      const { h, storage } = await setup();
      const c = new Client(h.url);
      await c.opened;
      c.send("hello", { token: "", device_id: "tab", caps: { push: "webpush" }, webpush }, "h1");
      const answer = await c.waitFor((f) => f.id === "h1");
      expect(answer).toMatchObject({ type: "error", id: "h1", payload: { code: "unsupported" } });
      expect(answer.payload.message).toContain(`"${field}"`);
      expect(await c.closedPromise).toBe(CLOSE_CODES.invalidHello);
      expect(await storage.getDevice(ANONYMOUS_OWNER, "tab")).toBeUndefined();
    },
  );

  it("web push - fcm.register with a bad subscription answers unsupported with its id and keeps the stored one", async () => {
    const { h, storage, service } = await setup();
    const good = subscriber(`${service.url}/push/good`).subscription;
    const tab = await Client.connect(h.url, { device_id: "tab", caps: { push: "webpush" }, webpush: good });
    for (const [what, webpush, field] of BAD) {
      const answer = await tab.request("fcm.register", { webpush });
      expect(answer, what).toMatchObject({ type: "error", payload: { code: "unsupported" } });
      expect(answer.payload.message, what).toContain(`"${field}"`);
    }
    expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toEqual(good);
    expect(tab.closeCode).toBeUndefined();
  });

  it("web push - by default the sender never posts to loopback or private addresses", async () => {
    service = await fakePushService();
    const sender = webPushSender({ vapid: VAPID, subject: SUBJECT, agent: service.agent });
    const device = {
      device_id: "tab",
      device_name: "",
      caps: { min_protocol: 1, media: true, push: "webpush", streaming: true },
      last_seen: 0,
      webpush: subscriber(`${service.url}/push/x`).subscription,
    };
    await expect(
      sender.send(ANONYMOUS_OWNER, device, { kind: "notification", title: "t", body: "b" }),
    ).rejects.toMatchObject({ permanent: true, gone: false });
    expect(service.requests).toEqual([]);
    for (const host of [
      "localhost",
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "[::1]",
      "[fd00::1]",
      "[fe80::1]",
      "[::ffff:127.0.0.1]",
      "app.localhost",
    ]) {
      expect(isPublicEndpoint(new URL(`https://${host}/push`)), host).toBe(false);
    }
    for (const host of ["fcm.googleapis.com", "updates.push.services.mozilla.com", "8.8.8.8", "[2001:4860::1]"]) {
      expect(isPublicEndpoint(new URL(`https://${host}/push`)), host).toBe(true);
    }
  });

  it("web push - by default a name that resolves to an internal address is refused too, before any connection", async () => {
    const device = {
      device_id: "tab",
      device_name: "",
      caps: { min_protocol: 1, media: true, push: "webpush", streaming: true },
      last_seen: 0,
      webpush: subscriber("https://push.example.test/push/x").subscription,
    };
    const resolvingTo =
      (address: string): LookupFunction =>
      (_host, options, callback) =>
        options.all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4);
    // A public-looking name pointing into the server's network: refused for good, never retried.
    const inward = webPushSender({ vapid: VAPID, subject: SUBJECT, lookup: resolvingTo("10.1.2.3"), timeoutMs: 2_000 });
    await expect(
      inward.send(ANONYMOUS_OWNER, device, { kind: "notification", title: "t", body: "b" }),
    ).rejects.toMatchObject({ permanent: true, message: expect.stringMatching(/internal address/) });
    // The same name resolving outward is tried (and fails here only because this machine has no network).
    const outward = webPushSender({
      vapid: VAPID,
      subject: SUBJECT,
      lookup: resolvingTo("100.128.0.1"),
      timeoutMs: 2_000,
    });
    const error = await outward.send(ANONYMOUS_OWNER, device, { kind: "notification", title: "t", body: "b" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ permanent: false });
    expect(String((error as Error).message)).not.toMatch(/internal address/);
  });

  it("web push - a sender with a bad VAPID pair or subject is refused at construction", () => {
    expect(() => webPushSender({ vapid: { publicKey: "x", privateKey: "y" }, subject: SUBJECT })).toThrow(TypeError);
    expect(() => webPushSender({ vapid: VAPID, subject: "http://example.com" })).toThrow(/subject/);
  });
});
