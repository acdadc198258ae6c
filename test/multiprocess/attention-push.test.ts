// Push follows attention across gateway processes (docs/PROTOCOL.md §15): two gateways on one
// PostgreSQL schema and one Redis prefix, the ntfy and FCM senders posting to a recording server on
// 127.0.0.1. The process running a turn decides its push; a read through the other one cancels it,
// and nothing is pushed twice however the devices are spread. A read through either process clears
// the answer's push on the other targets once (docs/PROTOCOL.md §21.4).
import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Redis } from "ioredis";
import { tokenAuthenticator, type PushSender } from "chat-gateway";
import { fcmPushSender } from "chat-gateway/push/fcm";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { Client, type Frame } from "../gateway/harness.js";
import { REDIS_URL, dropKeys, dropSchema, postgresAvailable, redisAvailable, runId } from "../fixtures/services.js";
import { recordingServer, type RecordingServer } from "../push/recording-server.js";
import { startNode, stopNode, type Node } from "./in-process.js";

const available = (await postgresAvailable("multi-process push")) && (await redisAvailable("multi-process push"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PUSH_AFTER_MS = 400;
const SEND_PATH = "/v1/projects/demo-project/messages:send";

async function say(c: Client, text: string): Promise<Frame> {
  const from = c.frames.length;
  const echo = await c.request("message.send", { chat_id: "default", text });
  if (echo.type !== "message") throw new Error(`send failed: ${JSON.stringify(echo)}`);
  return c.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id, 10_000, from);
}

describe.skipIf(!available)("push that follows attention across gateway processes", { timeout: 60_000 }, () => {
  const id = runId();
  const schema = `t_${id}`;
  const prefix = `t:${id}:`;
  const nodes: Node[] = [];
  const devices: Client[] = [];
  let server: RecordingServer;
  const device = async (on: Node, hello: Record<string, unknown>) => {
    const c = await Client.connect(on.url, hello);
    devices.push(c);
    return c;
  };
  const posts = (url: string) => server.requests.filter((r) => r.url === url);

  beforeAll(async () => {
    server = await recordingServer((request) => {
      if (request.url === "/token")
        return { json: { access_token: "access-1", expires_in: 3600, token_type: "Bearer" } };
      if (request.url === SEND_PATH) return { json: { name: "projects/demo-project/messages/0:1" } };
      return { json: { id: "ntfy-1" } };
    });
    const privateKey = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
      type: "pkcs8",
      format: "pem",
    }) as string;
    const push = (): PushSender[] => [
      ntfyPushSender({ baseUrl: `${server.url}/ntfy` }),
      fcmPushSender({
        serviceAccount: {
          project_id: "demo-project",
          client_email: "push@demo-project.iam.gserviceaccount.com",
          private_key: privateKey,
          token_uri: `${server.url}/token`,
        },
        apiBaseUrl: server.url,
      }),
    ];
    const authenticator = tokenAuthenticator({ "t-alice": "alice", "t-bob": "bob", "t-carol": "carol" });
    for (const name of ["A", "B"]) {
      nodes.push(
        await startNode({
          name,
          schema,
          prefix,
          connectionName: `push-${name}-${id}`,
          authenticator,
          push: push(),
          pushAfterMs: PUSH_AFTER_MS,
        }),
      );
    }
  });

  afterAll(async () => {
    for (const c of devices) await c.close().catch(() => undefined);
    for (const n of nodes) await stopNode(n);
    await server?.close();
    const admin = new Redis(REDIS_URL);
    await dropKeys(admin, prefix);
    admin.disconnect();
    await dropSchema(schema);
  });

  test("multi-process push - a read through process B cancels the push process A decided; the answer nobody reads is pushed once", async () => {
    const [a, b] = nodes;
    const phone = await device(a, {
      token: "t-alice",
      device_id: "phone",
      caps: { push: "ntfy" },
      ntfy_topic: "alice-phone",
    });
    const laptop = await device(b, { token: "t-alice", device_id: "laptop" });
    const read = await say(phone, "read this one on the laptop");
    await laptop.waitFor((f) => f.type === "message.stop" && f.payload.message_id === read.payload.message_id, 10_000);
    laptop.send("read", { chat_id: "default", message_id: read.payload.message_id });
    await phone.waitFor((f) => f.type === "read" && f.payload.device_id === "laptop", 10_000);
    const unread = await say(phone, "nobody reads this one");
    for (let i = 0; i < 300 && posts("/ntfy/alice-phone").length === 0; i++) await sleep(10);
    await sleep(PUSH_AFTER_MS * 3);
    // Only the answer nobody read was pushed, once, although a device of the owner stays connected.
    expect(posts("/ntfy/alice-phone").map((r) => r.body)).toEqual([unread.payload.final_text.slice(0, 200)]);
    expect(unread.payload.final_text).not.toBe(read.payload.final_text);
  });

  test("multi-process push - turns on both processes, targets on both: each answer reaches each target exactly once", async () => {
    const [a, b] = nodes;
    const phone = await device(a, {
      token: "t-bob",
      device_id: "phone",
      caps: { push: "ntfy" },
      ntfy_topic: "bob-phone",
    });
    const tablet = await device(b, {
      token: "t-bob",
      device_id: "tablet",
      caps: { push: "fcm" },
      fcm_token: "fcm-bob",
    });
    const answers = await Promise.all([
      say(phone, "one from A"),
      say(tablet, "two from B"),
      say(phone, "three from A"),
      say(tablet, "four from B"),
    ]);
    const fcmPosts = () => posts(SEND_PATH).filter((r) => JSON.parse(r.body).message.token === "fcm-bob");
    for (let i = 0; i < 500 && (posts("/ntfy/bob-phone").length < 4 || fcmPosts().length < 4); i++) await sleep(10);
    await sleep(PUSH_AFTER_MS * 3);
    const texts = answers.map((f) => f.payload.final_text.slice(0, 200)).sort();
    expect(
      posts("/ntfy/bob-phone")
        .map((r) => r.body)
        .sort(),
    ).toEqual(texts);
    const fcmIds = fcmPosts()
      .map((r) => JSON.parse(r.body).message.data.message_id)
      .sort();
    expect(fcmIds).toEqual(answers.map((f) => f.payload.message_id).sort());
  });

  test("multi-process push - an answer process A pushed and the phone reads through B is cleared on the tablet once; two reads at once clear each target once", async () => {
    const [a, b] = nodes;
    const phoneHello = {
      token: "t-carol",
      device_id: "phone",
      device_name: "Pixel",
      caps: { push: "ntfy" },
      ntfy_topic: "carol-phone",
    };
    await (await Client.connect(a.url, phoneHello)).close();
    await (
      await Client.connect(b.url, {
        token: "t-carol",
        device_id: "tablet",
        caps: { push: "fcm" },
        fcm_token: "fcm-carol",
      })
    ).close();
    const laptop = await device(a, { token: "t-carol", device_id: "laptop", device_name: "Laptop" });
    const desktop = await device(b, { token: "t-carol", device_id: "desktop", device_name: "Desktop" });
    const ntfy = () => server.requests.filter((r) => r.url.split("/").slice(0, 3).join("/") === "/ntfy/carol-phone");
    const fcm = () =>
      posts(SEND_PATH)
        .map((r) => JSON.parse(r.body).message)
        .filter((m) => m.token === "fcm-carol");
    const pushed = async (text: string, count: number) => {
      const answer = await say(laptop, text);
      await server.until(() => ntfy().length >= count && fcm().length >= count, `push ${count} on both targets`);
      return answer.payload.message_id as string;
    };

    // Pushed by A (the turn ran there); read by the phone through B.
    const first = await pushed("first", 1);
    const phone = await device(b, phoneHello);
    phone.send("read", { chat_id: "default", message_id: first });
    await server.until(() => fcm().length >= 2, "the FCM dismiss");
    expect(fcm()[1]).toEqual({ token: "fcm-carol", data: { dismiss: first }, android: { priority: "high" } });
    await phone.close();

    // Read at once through both processes: each target is cleared once, by one of them.
    const second = await pushed("second", 2);
    laptop.send("read", { chat_id: "default", message_id: second });
    desktop.send("read", { chat_id: "default", message_id: second });
    await server.until(() => fcm().length >= 4 && ntfy().length >= 3, "the second answer's clears");
    // A clear sent twice would come before the third answer's push, asked for after both reads.
    const third = await pushed("third", 4);
    await server.until(() => fcm().length >= 5, "the third answer's FCM push");
    expect(fcm().map((m) => m.data.dismiss ?? m.data.message_id)).toEqual([first, first, second, second, third]);
    expect(ntfy().map((r) => `${r.method} ${r.url}`)).toEqual([
      "POST /ntfy/carol-phone",
      "POST /ntfy/carol-phone",
      `PUT /ntfy/carol-phone/${second}/clear`,
      "POST /ntfy/carol-phone",
    ]);
  });
});
