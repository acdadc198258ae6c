// An ask's push across gateway processes (docs/PROTOCOL.md §21.6): two example-server processes on
// one PostgreSQL schema and one Redis prefix, pushing through ntfy to a stand-in server. The ask is
// raised on A, whose push waits `pushAfterMs`; a phone on B answers it meanwhile, so the ask is
// never pushed, while the answer nobody reads is.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Client } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { recordingServer, type RecordingServer } from "../push/recording-server.js";
import { createCluster, type Cluster, type GatewayProcess } from "./cluster.js";

const available =
  (await postgresAvailable("multi-process ask push")) && (await redisAvailable("multi-process ask push"));
const PASSWORD = "correct horse battery";

describe.skipIf(!available)("an ask's push across gateway processes", { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let ntfy: RecordingServer;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let token: string;
  const devices: Client[] = [];
  const device = async (on: GatewayProcess, hello: Record<string, unknown>) => {
    const c = await Client.connect(on.ws, hello, { authorization: `Bearer ${token}` });
    devices.push(c);
    return c;
  };

  beforeAll(async () => {
    ntfy = await recordingServer(() => ({ json: { id: "n1" } }));
    cluster = createCluster();
    cluster.addUser("alice", PASSWORD);
    const env = { GATEWAY_NTFY_URL: ntfy.url, GATEWAY_PUSH_AFTER_MS: "1500" };
    [a, b] = await Promise.all([cluster.start("A", env), cluster.start("B", env)]);
    const res = await fetch(`${a.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: PASSWORD }),
    });
    token = ((await res.json()) as { token: string }).token;
  }, 120_000);

  afterAll(async () => {
    for (const c of devices) await c.close().catch(() => undefined);
    await cluster?.destroy();
    await ntfy?.close();
  }, 30_000);

  test("multi-process ask push - an ask answered through B while its push waits on A is not pushed at all; the answer is", async () => {
    const laptop = await device(a, { device_id: "laptop", caps: { pickers: true } });
    const phone = await device(b, {
      device_id: "phone",
      caps: { push: "ntfy", pickers: true },
      ntfy_topic: "alice-phone",
    });
    const echo = await laptop.request("message.send", { chat_id: "default", text: "approve: deploy" });
    const card = await phone.waitFor((f) => f.type === "picker.approval", 10_000);
    const pickerId = String(card.payload.picker_id);
    const resolved = await phone.request("picker.select", { picker_id: pickerId, option_id: "approve" }, 10_000);
    expect(resolved.payload).toMatchObject({ outcome: "selected", device_id: "phone" });
    const stop = await laptop.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id,
      10_000,
    );
    // The answer, which nobody reads, falls due after the ask would have: once it is pushed, so was the ask.
    const posts = () => ntfy.requests.filter((r) => r.url === "/alice-phone");
    await ntfy.until(() => posts().length > 0, "the answer's push");
    expect(posts().map((r) => r.headers["x-sequence-id"])).toEqual([stop.payload.message_id]);
    expect(await cluster.query("SELECT key FROM due_pushes")).toEqual([]);
  });
});
