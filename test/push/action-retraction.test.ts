// Retraction (docs/PROTOCOL.md §21): once an ask resolves, every other target that was sent its
// push gets exactly one clearing push, and the target that answered gets none. Through the ntfy
// sender to a local server standing in for ntfy (publish with X-Sequence-ID, then
// PUT <topic>/<sequence id>/clear), and a recording sender for the rest.
import { afterEach, expect, it } from "vitest";
import type { Ask } from "chat-gateway";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { Client } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { actionHarness, recordingSender, until, type ActionHarness, type RecordedPush } from "./action-harness.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";

let t: ActionHarness | undefined;
let ntfy: RecordingServer | undefined;
afterEach(async () => {
  await t?.close();
  await ntfy?.close();
  t = ntfy = undefined;
});

const askOnce = () =>
  scriptedRuntime(async function* (input) {
    yield { type: "text", delta: JSON.stringify(await input.ask({ kind: "approval", title: "Deploy?" } as Ask)) };
  });

it("action retraction - answering on the phone clears the ask on the tablet once, and on the phone not at all", async () => {
  t = await actionHarness({ runtime: askOnce() });
  for (const id of ["phone", "tablet"])
    await (await Client.connect(t.h.url, { device_id: id, device_name: id, caps: { push: "rec" } })).close();
  const laptop = await Client.connect(t.h.url, { device_id: "laptop", caps: { pickers: true } });
  await laptop.request("message.send", { chat_id: "default", text: "go" });
  await until(() => t!.pushes.filter((p) => p.message.actions).length === 2);
  const phone = t.pushes.find((p) => p.device_id === "phone" && p.message.actions)!.message;
  const pickerId = phone.picker_id!;
  expect((await t.act(pickerId, { token: phone.actions![0]!.token })).status).toBe(200);
  await until(() => t!.pushes.some((p) => p.message.clear));
  await laptop.request("ping", {});
  const clears = (): RecordedPush[] => t!.pushes.filter((p) => p.message.clear);
  expect(clears().map((p) => p.device_id)).toEqual(["tablet"]);
  expect(clears()[0]!.message).toMatchObject({
    picker_id: pickerId,
    title: "Deploy?",
    body: "Approved on phone",
    url: "https://chat.example.com/?chat=default",
  });
  expect(clears()[0]!.message.actions).toBeUndefined();
  // Answered in the app too late: nothing more is cleared.
  await laptop.request("picker.select", { picker_id: pickerId, option_id: "deny" });
  await laptop.request("ping", {});
  expect(clears()).toHaveLength(1);
});

it("action retraction - an ask answered in the app clears both pushed targets; ntfy gets X-Sequence-ID, then PUT …/clear", async () => {
  ntfy = await recordingServer(() => ({ json: { id: "n1" } }));
  const pushes: RecordedPush[] = [];
  t = await actionHarness({
    runtime: askOnce(),
    push: [recordingSender(pushes), ntfyPushSender({ baseUrl: `${ntfy.url}/ntfy` })],
  });
  await (
    await Client.connect(t.h.url, {
      device_id: "phone",
      device_name: "Pixel",
      caps: { push: "ntfy" },
      ntfy_topic: "ann-phone",
    })
  ).close();
  await (await Client.connect(t.h.url, { device_id: "tablet", caps: { push: "rec" } })).close();
  const laptop = await Client.connect(t.h.url, { device_id: "laptop", device_name: "Laptop", caps: { pickers: true } });
  await laptop.request("message.send", { chat_id: "default", text: "go" });
  await until(() => ntfy!.requests.length === 1 && pushes.some((p) => p.message.actions));
  const pickerId = pushes[0]!.message.picker_id!;
  const publish = ntfy.requests[0]!;
  expect(publish).toMatchObject({ method: "POST", url: "/ntfy/ann-phone" });
  expect(publish.headers["x-sequence-id"]).toBe(pickerId);
  const actions = JSON.parse(String(publish.headers.actions));
  expect(actions.map((a: { action: string; label: string }) => [a.action, a.label])).toEqual([
    ["http", "Approve"],
    ["http", "Deny"],
  ]);
  expect(actions[0]).toMatchObject({ method: "POST", url: `https://chat.example.com/api/asks/${pickerId}/act` });
  expect(JSON.parse(actions[0].body).token).toMatch(/^[A-Za-z0-9_-]{43}$/);

  await laptop.request("picker.select", { picker_id: pickerId, option_id: "deny" });
  await until(() => ntfy!.requests.some((r) => r.method === "PUT") && pushes.some((p) => p.message.clear));
  expect(ntfy.requests.find((r) => r.method === "PUT")).toMatchObject({ url: `/ntfy/ann-phone/${pickerId}/clear` });
  expect(pushes.filter((p) => p.message.clear).map((p) => [p.device_id, p.message.body])).toEqual([
    ["tablet", "Denied on Laptop"],
  ]);
  await laptop.request("ping", {});
  // The answer that follows the ask is pushed too, when it comes: only the ask's requests count.
  const ofAsk = ntfy.requests.filter((r) => r.headers["x-sequence-id"] === pickerId || r.url.includes(pickerId));
  expect(ofAsk).toHaveLength(2);
});
