// Push follows attention (docs/PROTOCOL.md §15): through a real gateway, the ntfy and FCM senders
// post to a recording server on 127.0.0.1 that stands in for ntfy and Google.
import { generateKeyPairSync } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { fcmPushSender } from "chat-gateway/push/fcm";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import type { PushSender } from "chat-gateway";
import { everyStorage } from "../fixtures/storages.js";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { gate, scriptedRuntime, sleep } from "../gateway/runtimes.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";

const PRIVATE_PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
  type: "pkcs8",
  format: "pem",
}) as string;
const SEND_PATH = "/v1/projects/demo-project/messages:send";
const PUSH_AFTER_MS = 300;

const { storages, cleanup } = await everyStorage("attention push");
afterAll(cleanup);

let h: Harness | undefined;
let server: RecordingServer | undefined;
afterEach(async () => {
  await h?.close();
  await server?.close();
  h = server = undefined;
});

async function senders(): Promise<{ push: PushSender[]; server: RecordingServer }> {
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
  return { push: [ntfyPushSender({ baseUrl: `${server.url}/ntfy` }), fcm], server };
}

const pushes = (s: RecordingServer) =>
  s.requests
    .filter((r) => r.url === "/ntfy/alice-phone" || r.url === SEND_PATH)
    .map((r) => (r.url === SEND_PATH ? "fcm" : "ntfy"))
    .sort();

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(10);
}

it("push - an answer no connected device reads is pushed after pushAfterMs, exactly once per target (ntfy and FCM)", async () => {
  const { push, server } = await senders();
  h = await startGateway({ push, pushAfterMs: PUSH_AFTER_MS });
  // A socket left open that never reads (a background tab) does not swallow the push.
  const phone = await Client.connect(h.url, { device_id: "phone", caps: { push: "ntfy" }, ntfy_topic: "alice-phone" });
  await Client.connect(h.url, { device_id: "tablet", caps: { push: "fcm" }, fcm_token: "fcm-token-1" }).then((c) =>
    c.close(),
  );
  const { final } = await phone.say({ chat_id: "default", text: "hello" });
  expect(pushes(server)).toEqual([]);
  await until(() => pushes(server).length === 2);
  await sleep(PUSH_AFTER_MS * 2);
  expect(pushes(server)).toEqual(["fcm", "ntfy"]);
  const sent = JSON.parse(server.requests.find((r) => r.url === SEND_PATH)!.body).message;
  expect(sent.data).toMatchObject({ kind: "message", message_id: final.payload.message_id });
});

describe.each(storages)("%s", (_name, make) => {
  it("push - a read of the answer before pushAfterMs cancels its push; a read of an older message does not", async () => {
    const { push, server } = await senders();
    h = await startGateway({ storage: await make(), push, pushAfterMs: PUSH_AFTER_MS });
    const phone = await Client.connect(h.url, {
      device_id: "phone",
      caps: { push: "ntfy" },
      ntfy_topic: "alice-phone",
    });
    const first = (await phone.say({ chat_id: "default", text: "one" })).final;
    phone.send("read", { chat_id: "default", message_id: first.payload.message_id });
    await phone.waitFor((f) => f.type === "read");
    const second = (await phone.say({ chat_id: "default", text: "two" })).final;
    await until(() => pushes(server).length === 1);
    await sleep(PUSH_AFTER_MS * 2);
    // Only the second answer, which nobody read, was pushed.
    expect(server.requests.filter((r) => r.url === "/ntfy/alice-phone")).toHaveLength(1);
    expect(second.payload.message_id).not.toBe(first.payload.message_id);
  });
});

it("push - with no device of the owner connected, the answer is pushed at once", async () => {
  const { push, server } = await senders();
  const release = gate();
  const runtime = scriptedRuntime(async function* () {
    await release.wait;
    yield { type: "text", delta: "done while you were away" };
  });
  h = await startGateway({ push, runtime, pushAfterMs: 600_000 });
  const phone = await Client.connect(h.url, { device_id: "phone", caps: { push: "ntfy" }, ntfy_topic: "alice-phone" });
  let gone = 0;
  h.gateway.on("disconnect", () => gone++);
  phone.send("message.send", { chat_id: "default", text: "hello" });
  await phone.waitFor((f) => f.type === "message");
  await phone.close();
  await until(() => gone === 1);
  release.release();
  await until(() => pushes(server).length === 1);
  expect(pushes(server)).toEqual(["ntfy"]);
});
