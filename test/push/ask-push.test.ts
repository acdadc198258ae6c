// An ask reaches a device with no connection (docs/PROTOCOL.md §11): through a real gateway, the
// ntfy and FCM senders post to recording servers that stand in for ntfy and Google.
import { generateKeyPairSync } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { fcmPushSender } from "chat-gateway/push/fcm";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { gate, scriptedRuntime } from "../gateway/runtimes.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";

const PRIVATE_PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
  type: "pkcs8",
  format: "pem",
}) as string;
const SEND_PATH = "/v1/projects/demo-project/messages:send";

let h: Harness | undefined;
let server: RecordingServer | undefined;
afterEach(async () => {
  await h?.close();
  await server?.close();
  h = server = undefined;
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
}

it("ask push - with no device connected, an ask is pushed at high priority with the question as the body, through ntfy and FCM", async () => {
  server = await recordingServer((request) => {
    if (request.url === "/token") return { json: { access_token: "access-1", expires_in: 3600, token_type: "Bearer" } };
    if (request.url === SEND_PATH) return { json: { name: "projects/demo-project/messages/0:1" } };
    return { json: { id: "ntfy-1" } };
  });
  const fcm = fcmPushSender({
    serviceAccount: {
      project_id: "demo-project",
      client_email: "push@demo-project.iam.gserviceaccount.com",
      private_key: PRIVATE_PEM,
      token_uri: `${server.url}/token`,
    },
    apiBaseUrl: server.url,
  });
  const release = gate();
  let asked: Promise<unknown> | undefined;
  const runtime = scriptedRuntime(async function* (input) {
    await release.wait;
    asked = input.ask({
      kind: "confirm",
      title: "Deploy now?",
      body: "Deploy build 42 to production?",
      options: [{ id: "yes", label: "Yes" }],
    });
    const answer = await asked;
    yield { type: "text", delta: JSON.stringify(answer) };
  });
  h = await startGateway({ runtime, push: [ntfyPushSender({ baseUrl: `${server.url}/ntfy` }), fcm] });
  let gone = 0;
  h.gateway.on("disconnect", () => gone++);
  const phone = await Client.connect(h.url, { caps: { push: "ntfy" }, ntfy_topic: "alice-phone" });
  const tablet = await Client.connect(h.url, { caps: { push: "fcm", pickers: true }, fcm_token: "fcm-token-1" });
  await tablet.close();
  await phone.request("message.send", { chat_id: "default", text: "deploy" });
  await phone.close();
  // Away everywhere: both connections are closed on the gateway's side too.
  await until(() => gone === 2);
  release.release();

  await until(
    () =>
      server!.requests.some((r) => r.url === "/ntfy/alice-phone") && server!.requests.some((r) => r.url === SEND_PATH),
  );
  const ntfy = server.requests.find((r) => r.url === "/ntfy/alice-phone")!;
  expect(ntfy.headers.priority).toBe("4");
  expect(ntfy.headers.title).toBe("Deploy now?");
  expect(ntfy.body).toBe("Deploy build 42 to production?");
  const sent = JSON.parse(server.requests.find((r) => r.url === SEND_PATH)!.body).message;
  expect(sent).toMatchObject({
    token: "fcm-token-1",
    notification: { title: "Deploy now?", body: "Deploy build 42 to production?" },
    android: { priority: "high" },
    data: {
      kind: "notification",
      notification_kind: "clarify",
      chat_id: "default",
      picker_id: expect.stringMatching(/^pk/),
    },
  });
  // The device comes back, finds the card by sync, and answers it.
  const back = await Client.connect(h.url, { caps: { push: "fcm", pickers: true }, fcm_token: "fcm-token-1" });
  await back.request("sync", { cursor: 0 });
  const card = back.of("picker.confirm")[0]!;
  expect(card.payload.picker_id).toBe(sent.data.picker_id);
  expect(
    (await back.request("picker.select", { picker_id: card.payload.picker_id, option_id: "yes" })).payload.outcome,
  ).toBe("selected");
  expect(await asked).toEqual({ outcome: "selected", option_id: "yes" });
});
