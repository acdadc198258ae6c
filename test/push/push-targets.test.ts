// Push targets through a real gateway and a loopback ntfy: a topic or token outside its grammar is
// refused where it enters (hello, fcm.register), and no push ever reaches ntfy at another path
// with the operator's token (docs/PROTOCOL.md "Push, notifications"); and however many device
// records an owner has, one message makes at most 16 pushes, one per target (§6).
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type Device } from "chat-gateway";
import { CLOSE_CODES } from "chat-gateway/protocol";
import { memoryStorage } from "chat-gateway/storage/memory";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { sleep } from "../gateway/runtimes.js";
import { recordingServer, type RecordingServer } from "./recording-server.js";

const HOSTILE_TOPICS = [
  "..",
  "../x",
  "a/b",
  "%2e%2e",
  "x".repeat(65),
  "a b",
  "t?x=1",
  "t#x",
  "caf\u00e9",
  "..%2fadmin",
];
const HOSTILE_TOKENS = ["a b", "x".repeat(4097), "tok\nen", "\u00e9"];

let h: Harness | undefined;
let ntfy: RecordingServer | undefined;
afterEach(async () => {
  await h?.close();
  await ntfy?.close();
  h = ntfy = undefined;
});

async function setup() {
  ntfy = await recordingServer(() => ({ json: { id: "x" } }));
  const storage = memoryStorage();
  h = await startGateway({
    storage,
    push: [ntfyPushSender({ baseUrl: `${ntfy.url}/ntfy`, token: "tk_operator" })],
    pushRetry: { attempts: 1, backoffMs: 10 },
  });
  return { storage, ntfy, h };
}

/** Notify the anonymous owner while no device is connected, and wait for the pushes to settle. */
async function pushNow(harness: Harness): Promise<void> {
  await harness.gateway.notify(ANONYMOUS_OWNER, { kind: "generic", title: "Ping", body: "from the test" });
  await sleep(300);
}

function phone(i: number, topic: string, lastSeen: number): Device {
  return {
    device_id: `phone-${i}`,
    device_name: `Phone ${i}`,
    caps: { min_protocol: 1, media: true, push: "ntfy", streaming: true },
    ntfy_topic: topic,
    last_seen: lastSeen,
  };
}

/** The topics pushed to, once `count` requests arrived and a while passed for any more. */
async function pushedTopics(server: RecordingServer, count: number): Promise<string[]> {
  for (let i = 0; i < 200 && server.requests.length < count; i++) await sleep(25);
  await sleep(300);
  return server.requests.map((r) => r.url.replace("/ntfy/", "")).sort();
}

describe("push targets", () => {
  it.each(HOSTILE_TOPICS)(
    "push targets - hello with ntfy_topic %j is refused with unsupported and closed; nothing is stored or pushed",
    async (topic) => {
      const { storage, ntfy, h } = await setup();
      const c = new Client(h.url);
      await c.opened;
      c.send("hello", { token: "", device_id: "phone", ntfy_topic: topic }, "h1");
      const answer = await c.waitFor((f) => f.id === "h1");
      expect(answer).toMatchObject({ type: "error", id: "h1", payload: { code: "unsupported" } });
      expect(answer.payload.message).toContain('"ntfy_topic"');
      expect(await c.closedPromise).toBe(CLOSE_CODES.invalidHello);
      expect(await storage.getDevice(ANONYMOUS_OWNER, "phone")).toBeUndefined();
      await pushNow(h);
      expect(ntfy.requests).toEqual([]);
    },
  );

  it("push targets - fcm.register with a hostile topic or token answers unsupported with its id and keeps the valid topic; pushes go to that topic only", async () => {
    const { storage, ntfy, h } = await setup();
    const phone = await Client.connect(h.url, {
      device_id: "phone",
      ntfy_topic: "Phone_topic-1",
      caps: { push: "ntfy" },
    });
    for (const [i, topic] of HOSTILE_TOPICS.entries()) {
      const answer = await phone.request("fcm.register", { ntfy_topic: topic });
      expect(answer).toMatchObject({ type: "error", payload: { code: "unsupported" } });
      expect(answer.payload.message, `topic ${i}`).toContain('"ntfy_topic"');
    }
    for (const token of HOSTILE_TOKENS) {
      const answer = await phone.request("fcm.register", { fcm_token: token });
      expect(answer).toMatchObject({ type: "error", payload: { code: "unsupported" } });
      expect(answer.payload.message).toContain('"fcm_token"');
    }
    expect(await storage.getDevice(ANONYMOUS_OWNER, "phone")).toMatchObject({ ntfy_topic: "Phone_topic-1" });
    expect((await storage.getDevice(ANONYMOUS_OWNER, "phone"))?.fcm_token).toBeUndefined();
    await phone.close();
    await pushNow(h);
    expect(ntfy.requests.map((r) => [r.method, r.url, r.headers.authorization])).toEqual([
      ["POST", "/ntfy/Phone_topic-1", "Bearer tk_operator"],
    ]);
  });

  it("push targets - the longest valid topic is taken, and an empty topic clears it", async () => {
    const { storage, ntfy, h } = await setup();
    const longest = "A-_9".repeat(16);
    const phone = await Client.connect(h.url, { device_id: "phone", ntfy_topic: longest, caps: { push: "ntfy" } });
    expect((await storage.getDevice(ANONYMOUS_OWNER, "phone"))?.ntfy_topic).toBe(longest);
    await phone.close();
    await pushNow(h);
    expect(ntfy.requests.map((r) => r.url)).toEqual([`/ntfy/${longest}`]);
    const again = await Client.connect(h.url, { device_id: "phone" });
    again.send("fcm.register", { ntfy_topic: "" });
    expect((await again.request("ping", {})).type).toBe("pong");
    expect(again.of("error")).toEqual([]);
    await again.close();
    await pushNow(h);
    expect(ntfy.requests).toHaveLength(1);
  });

  it("push fan-out - a message goes to the 16 most recently seen targets, each once, however many device records the owner has", async () => {
    const { storage, ntfy, h } = await setup();
    // 200 records an owner's client made by naming a new device id in each hello; the newest 20
    // share 4 topics, so the 16 newest targets reach back past them.
    for (let i = 0; i < 200; i++) {
      const topic = i >= 180 ? `shared-${i % 4}` : `topic-${i}`;
      await storage.putDevice(ANONYMOUS_OWNER, phone(i, topic, 1_000_000 + i));
    }
    await h.gateway.notify(ANONYMOUS_OWNER, { kind: "generic", title: "Ping", body: "from the test" });
    const expected = [
      ...[0, 1, 2, 3].map((k) => `shared-${k}`),
      ...Array.from({ length: 12 }, (_, k) => `topic-${179 - k}`),
    ].sort();
    expect(await pushedTopics(ntfy, 16)).toEqual(expected);
  });

  it("push fan-out - two devices registering one topic over the wire get one push; a device that never pushes takes no place", async () => {
    const { ntfy, h } = await setup();
    for (const device_id of ["tablet", "phone", "laptop"]) {
      const push = device_id === "laptop" ? "none" : "ntfy";
      const c = await Client.connect(h.url, { device_id, ntfy_topic: "family-topic", caps: { push } });
      await c.close();
    }
    await h.gateway.notify(ANONYMOUS_OWNER, { kind: "generic", title: "Ping", body: "from the test" });
    expect(await pushedTopics(ntfy, 1)).toEqual(["family-topic"]);
  });
});
