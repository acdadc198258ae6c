// Asks across gateway processes (docs/PROTOCOL.md §11): two example-server processes on one
// PostgreSQL schema and one Redis prefix. The process running the turn is the arbiter; answers
// reaching the other one travel on the bus, and exactly one answer wins.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Client, type Frame } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { createCluster, type Cluster, type GatewayProcess } from "./cluster.js";

const available = (await postgresAvailable("multi-process asks")) && (await redisAvailable("multi-process asks"));
const PASSWORD = "correct horse battery";

describe.skipIf(!available)("asks across gateway processes", { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let token: string;
  const devices: Client[] = [];
  const device = async (on: GatewayProcess, hello: Record<string, unknown> = {}) => {
    const c = await Client.connect(on.ws, hello, { authorization: `Bearer ${token}` });
    devices.push(c);
    return c;
  };
  const finalOf = (c: Client, echo: Frame) =>
    c.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id, 10_000);

  beforeAll(async () => {
    cluster = createCluster();
    cluster.addUser("alice", PASSWORD);
    [a, b] = await Promise.all([cluster.start("A"), cluster.start("B")]);
    const res = await fetch(`${a.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: PASSWORD }),
    });
    token = ((await res.json()) as { token: string }).token;
  }, 60_000);

  afterAll(async () => {
    for (const c of devices) await c.close().catch(() => undefined);
    await cluster?.destroy();
  }, 30_000);

  test("multi-process asks - answers from both processes at once: exactly one wins, everyone gets the outcome that stands", async () => {
    const onA = await device(a, { caps: { pickers: true } });
    const onB = await device(b, { caps: { pickers: true } });
    const echo = await onA.request("message.send", { chat_id: "default", text: "approve: race" });
    const card = await onB.waitFor((f) => f.type === "picker.approval", 10_000);
    const id = card.payload.picker_id;
    const [fromA, fromB] = await Promise.all([
      onA.request("picker.select", { picker_id: id, option_id: "approve" }, 10_000),
      onB.request("picker.select", { picker_id: id, option_id: "deny" }, 10_000),
    ]);
    expect(fromA.type).toBe("picker.resolved");
    expect(fromB.type).toBe("picker.resolved");
    expect(fromB.payload).toEqual(fromA.payload);
    const winner = fromA.payload.option_id;
    expect(["approve", "deny"]).toContain(winner);
    expect((await finalOf(onA, echo)).payload.final_text).toBe(winner === "approve" ? "You said: race" : "Denied.");
    const stored = [...onA.of("picker.resolved"), ...onB.of("picker.resolved")].filter((f) => f.seq !== undefined);
    expect(new Set(stored.map((f) => f.seq)).size).toBe(1);
    // A late answer on the other process learns the same outcome.
    expect((await onB.request("picker.select", { picker_id: id, option_id: "approve" }, 10_000)).payload).toEqual(
      fromA.payload,
    );
  });

  test("multi-process asks - a device without pickers on the other process answers by /approve; with nothing open it is told so", async () => {
    const onA = await device(a, { caps: { pickers: true } });
    const plain = await device(b, { device_id: "plain-on-b" });
    const echo = await onA.request("message.send", { chat_id: "default", text: "approve: from afar" });
    await plain.waitFor((f) => f.type === "notification" && f.payload.kind === "approval", 10_000);
    await plain.request("message.send", { chat_id: "default", text: "/approve" });
    expect((await finalOf(onA, echo)).payload.final_text).toBe("You said: from afar");
    const resolved = await onA.waitFor(
      (f) => f.type === "picker.resolved" && f.payload.device_id === "plain-on-b",
      10_000,
    );
    expect(resolved.payload).toMatchObject({ outcome: "selected", option_id: "approve" });
    expect(plain.frames.some((f) => f.type.startsWith("picker."))).toBe(false);
    const none = await plain.request("message.send", { chat_id: "default", text: "/deny" });
    expect((await finalOf(plain, none)).payload.final_text).toBe("There is no open approval here.");
  });
});
