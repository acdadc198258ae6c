// Durable pushes (docs/PROTOCOL.md §21.6) in one process: two gateways on one memory storage and
// the ntfy sender posting to a stand-in server. A push is stored before it is waited on; the
// gateway that stored it takes it back when it falls due, and another gateway whose clock is past
// the due time claims it at start and sends it unless a read covers it, each push once.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import type { DuePushRecord, Storage } from "chat-gateway/storage";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { sleep } from "../gateway/runtimes.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

const harnesses: Harness[] = [];
const clients: Client[] = [];
let server: RecordingServer | undefined;
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const h of harnesses.splice(0)) await h.close();
  await server?.close();
  server = undefined;
});

afterAll(removeTempDirs);

/** A storage (memory unless given) that counts the pushes stored in it. */
function countingStorage(storage: Storage = memoryStorage()): { storage: Storage; stored: DuePushRecord[] } {
  const stored: DuePushRecord[] = [];
  const store = storage.duePushes!;
  const add = store.addDuePush.bind(store);
  store.addDuePush = async (record) => {
    await add(record);
    stored.push(record);
  };
  return { storage, stored };
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 1_000) throw new Error(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

async function gatewayOn(
  storage: Storage,
  options: { pushAfterMs: number; now?: () => number; publicUrl?: string },
): Promise<Harness> {
  server ??= await recordingServer(() => ({ json: { id: "ntfy-1" } }));
  const h = await startGateway({ storage, push: [ntfyPushSender({ baseUrl: `${server.url}/ntfy` })], ...options });
  harnesses.push(h);
  return h;
}

async function phoneOn(h: Harness): Promise<Client> {
  const phone = await Client.connect(h.url, { device_id: "phone", caps: { push: "ntfy" }, ntfy_topic: "alice-phone" });
  clients.push(phone);
  return phone;
}

const posts = () => server!.requests.filter((r) => r.method === "POST" && r.url === "/ntfy/alice-phone");

it("durable push - the gateway that stored a push takes it back when it falls due: sent once, nothing left stored", async () => {
  const { storage, stored } = countingStorage();
  const h = await gatewayOn(storage, { pushAfterMs: 300 });
  const phone = await phoneOn(h);
  const { final } = await phone.say({ chat_id: "default", text: "hello" });
  await until("the push arrives", () => posts().length > 0);
  await sleep(600);
  expect(stored.map((r) => r.key)).toEqual([`m:${final.payload.message_id}`]);
  expect(posts().map((r) => r.body)).toEqual([String(final.payload.final_text).slice(0, 200)]);
  expect(await storage.duePushes!.claimDuePushes(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
});

it("durable push - another gateway past the due time sends the waiting push nobody read, once, and not the one that was read", async () => {
  const { storage, stored } = countingStorage();
  const a = await gatewayOn(storage, { pushAfterMs: 600_000 });
  const phone = await phoneOn(a);
  const read = await phone.say({ chat_id: "default", text: "read this one" });
  phone.send("read", { chat_id: "default", message_id: read.final.payload.message_id });
  await phone.waitFor((f) => f.type === "read" && f.payload.message_id === read.final.payload.message_id);
  const unread = await phone.say({ chat_id: "default", text: "nobody reads this one" });
  await until("both pushes are stored", () => stored.length === 2);
  expect(posts()).toEqual([]);
  // A second gateway whose clock is past both due times: its start claims them.
  await gatewayOn(storage, { pushAfterMs: 600_000, now: () => Date.now() + 600_001 });
  await until("the push arrives", () => posts().length > 0);
  await sleep(500);
  expect(posts().map((r) => r.body)).toEqual([String(unread.final.payload.final_text).slice(0, 200)]);
  expect(await storage.duePushes!.claimDuePushes(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
});

it("durable push - an ask's waiting push sent by another gateway carries its action buttons, minted then", async () => {
  const { storage, stored } = countingStorage();
  const a = await gatewayOn(storage, { pushAfterMs: 600_000 });
  const phone = await Client.connect(a.url, {
    device_id: "phone",
    caps: { push: "ntfy", pickers: true },
    ntfy_topic: "alice-phone",
  });
  clients.push(phone);
  await phone.request("message.send", { chat_id: "default", text: "approve: deploy" });
  const card = await phone.waitFor((f) => f.type === "picker.approval");
  const pickerId = String(card.payload.picker_id);
  await until("the ask's push is stored", () => stored.some((r) => r.key === `p:${pickerId}`));
  expect(await storage.actionTokens!.actionTokensOf("anonymous", pickerId)).toEqual([]);
  await gatewayOn(storage, {
    pushAfterMs: 600_000,
    now: () => Date.now() + 600_001,
    publicUrl: "https://chat.example",
  });
  await until("the ask's push arrives", () => posts().length > 0);
  await sleep(500);
  expect(posts()).toHaveLength(1);
  expect(posts()[0]!.headers["x-sequence-id"]).toBe(pickerId);
  const actions = JSON.parse(String(posts()[0]!.headers.actions)) as Array<{ url: string; label: string }>;
  expect(actions.map((x) => [x.label, x.url])).toEqual([
    ["Approve", `https://chat.example/api/asks/${pickerId}/act`],
    ["Deny", `https://chat.example/api/asks/${pickerId}/act`],
  ]);
});

describe.each([
  ["memory", async () => memoryStorage()],
  ["sqljs", async () => sqlJsStorage({ dir: await tempDir(), inProcess: true })],
])("on %s", (_name, makeStorage) => {
  it("durable push - an ask answered in the app while its push waits is not pushed at all, and nothing of it stays stored", async () => {
    const { storage, stored } = countingStorage(await makeStorage());
    const h = await gatewayOn(storage, { pushAfterMs: 300 });
    const phone = await Client.connect(h.url, {
      device_id: "phone",
      caps: { push: "ntfy", pickers: true },
      ntfy_topic: "alice-phone",
    });
    clients.push(phone);
    await phone.request("message.send", { chat_id: "default", text: "approve: deploy" });
    const card = await phone.waitFor((f) => f.type === "picker.approval");
    const pickerId = String(card.payload.picker_id);
    await until("the ask's push is stored", () => stored.some((r) => r.key === `p:${pickerId}`));
    await phone.request("picker.select", { picker_id: pickerId, option_id: "approve" });
    const stop = await phone.waitFor((f) => f.type === "message.stop");
    // The answer nobody reads falls due after the ask would have: once it is pushed, so was the ask.
    await until("the answer's push arrives", () => posts().length > 0);
    expect(posts().map((r) => r.headers["x-sequence-id"])).toEqual([stop.payload.message_id]);
    expect(await storage.duePushes!.claimDuePushes(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    expect(await storage.actionTokens!.actionTokensOf("anonymous", pickerId)).toEqual([]);
  });
});
