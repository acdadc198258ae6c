// Retraction of a message's push once it is read (docs/PROTOCOL.md §21.4): an answer pushed to a
// phone (ntfy), a tablet (FCM) and a browser (Web Push) is read on the phone; the tablet gets one
// FCM `dismiss`, the browser one same-tag clear, the phone nothing. Through the real senders to
// the stand-ins: a recording server for ntfy and Google, a push service on https://127.0.0.1.
import { generateKeyPairSync } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { fcmPushSender } from "chat-gateway/push/fcm";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { generateVapidKeys, webPushSender } from "chat-gateway/push/webpush";
import { everyStorage } from "../fixtures/storages.js";
import { Client, startGateway, type Frame, type Harness } from "../gateway/harness.js";
import { until } from "./action-harness.js";
import { fakePushService, subscriber, type FakePushService } from "./fake-push-service.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";

const PRIVATE_PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
  type: "pkcs8",
  format: "pem",
}) as string;
const SEND_PATH = "/v1/projects/demo-project/messages:send";

const { storages, cleanup } = await everyStorage("read retraction");
afterAll(cleanup);

let h: Harness | undefined;
let google: RecordingServer | undefined;
let service: FakePushService | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await h?.close();
  await google?.close();
  await service?.close();
  h = google = service = undefined;
});

async function say(c: Client, text: string): Promise<Frame> {
  const from = c.frames.length;
  const echo = await c.request("message.send", { chat_id: "default", text });
  return c.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id, 10_000, from);
}

describe.each(storages)("read retraction on %s", (_name, makeStorage) => {
  it("read retraction - an answer read on the phone clears the tablet (FCM dismiss) and the browser (Web Push clear) once, the phone not at all", async () => {
    google = await recordingServer((r) =>
      r.url === "/token"
        ? { json: { access_token: "access-1", expires_in: 3600, token_type: "Bearer" } }
        : { json: r.url === SEND_PATH ? { name: "projects/demo-project/messages/0:1" } : { id: "n1" } },
    );
    service = await fakePushService();
    const push = [
      ntfyPushSender({ baseUrl: `${google.url}/ntfy` }),
      fcmPushSender({
        serviceAccount: {
          project_id: "demo-project",
          client_email: "push@demo-project.iam.gserviceaccount.com",
          private_key: PRIVATE_PEM,
          token_uri: `${google.url}/token`,
        },
        apiBaseUrl: google.url,
      }),
      webPushSender({
        vapid: generateVapidKeys(),
        subject: "mailto:ops@example.com",
        agent: service.agent,
        endpointAllowed: () => true,
      }),
    ];
    h = await startGateway({ storage: await makeStorage(), push, pushAfterMs: 200 });
    const browser = subscriber(`${service.url}/push/browser`);
    const phoneHello = { device_id: "phone", device_name: "Pixel", caps: { push: "ntfy" }, ntfy_topic: "ann-phone" };
    await (await Client.connect(h.url, phoneHello)).close();
    await (await Client.connect(h.url, { device_id: "tablet", caps: { push: "fcm" }, fcm_token: "fcm-tab" })).close();
    await (
      await Client.connect(h.url, { device_id: "browser", caps: { push: "webpush" }, webpush: browser.subscription })
    ).close();
    const laptop = await Client.connect(h.url, { device_id: "laptop" });
    clients.push(laptop);
    const ntfy = () => google!.requests.filter((r) => r.url.startsWith("/ntfy/ann-phone"));
    const fcm = () => google!.requests.filter((r) => r.url === SEND_PATH).map((r) => JSON.parse(r.body).message);
    const web = () => service!.requests.map((r) => JSON.parse(browser.decrypt(r.body)));

    // Nobody reads the answer within pushAfterMs: every target is pushed it.
    const answer = await say(laptop, "first");
    const id = answer.payload.message_id as string;
    await until(() => ntfy().length === 1 && fcm().length === 1 && web().length === 1);
    expect(ntfy()[0]!.headers["x-sequence-id"]).toBe(id);

    const phone = await Client.connect(h.url, phoneHello);
    clients.push(phone);
    phone.send("read", { chat_id: "default", message_id: id });
    await until(() => fcm().length === 2 && web().length === 2);
    expect(fcm()[1]).toEqual({ token: "fcm-tab", data: { dismiss: id }, android: { priority: "high" } });
    expect(web()[1]).toMatchObject({ message_id: id, clear: true, body: "Read on Pixel", notification: { tag: id } });

    // A later read of the same lane clears nothing more; the next answer is pushed after all of it.
    await phone.close();
    laptop.send("read", { chat_id: "default", message_id: id });
    const next = await say(laptop, "second");
    await until(() => web().length === 3 && fcm().length === 3 && ntfy().length === 2);
    expect(web()[2]).toMatchObject({ message_id: next.payload.message_id });
    expect(web()[2].clear).toBeUndefined();
    expect(fcm()[2].data.message_id).toBe(next.payload.message_id);
    // The phone that read it was pushed both answers and cleared nothing.
    expect(ntfy().map((r) => r.method)).toEqual(["POST", "POST"]);
  }, 60_000);
});
