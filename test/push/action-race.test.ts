// First answer wins across the lock screen and the app (docs/PROTOCOL.md §21): 50 asks on a
// sql.js storage, each answered at once by the phone's button, a `picker.select` from the
// laptop and the tablet's button. Each ask resolves exactly once: one stored and one delivered
// `picker.resolved`, one answer to the runtime, exactly one of the three told it won.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type AskAnswer } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { redisBus } from "chat-gateway/bus/redis";
import { redisLaneLock } from "chat-gateway/redis";
import { DATABASE_URL, REDIS_URL, dropSchema, postgresAvailable, redisAvailable, runId } from "../fixtures/services.js";
import { Client } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { actionHarness, until, type ActionHarness } from "./action-harness.js";

const ASKS = 50;

let t: ActionHarness | undefined;
let dir: string | undefined;
afterEach(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  t = dir = undefined;
});

it("action race - 50 asks each answered at once by two buttons and a picker.select resolve exactly once each (sql.js)", async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-action-race-"));
  const answers: Array<{ i: number; answer: AskAnswer }> = [];
  const runtime = scriptedRuntime(async function* (input) {
    for (let i = 0; i < ASKS; i++)
      answers.push({ i, answer: await input.ask({ kind: "approval", title: `step ${i}` }) });
    yield { type: "text", delta: "done" };
  });
  const storage = sqlJsStorage({ dir });
  t = await actionHarness({ runtime, storage });
  for (const id of ["phone", "tablet"])
    await (await Client.connect(t.h.url, { device_id: id, device_name: id, caps: { push: "rec" } })).close();
  const laptop = await Client.connect(t.h.url, { device_id: "laptop", caps: { pickers: true } });
  const watcher = await Client.connect(t.h.url, { device_id: "watcher", caps: { pickers: true } });
  await laptop.request("message.send", { chat_id: "default", text: "go" });

  const winners: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < ASKS; i++) {
    await until(() => {
      const fresh = t!.pushes.filter((p) => p.message.actions && !seen.has(p.message.picker_id!));
      return fresh.length === 2;
    });
    const fresh = t.pushes.filter((p) => p.message.actions && !seen.has(p.message.picker_id!));
    const pickerId = fresh[0]!.message.picker_id!;
    seen.add(pickerId);
    const token = (device: string) =>
      fresh.find((p) => p.device_id === device)!.message.actions!.find((a) => a.option_id === "approve")!.token;
    // All three at once, each ask another one a few milliseconds ahead (the socket is faster than
    // a request), so that every path wins some and loses some.
    const ahead = (k: number) => new Promise((r) => setTimeout(r, k === i % 3 ? 0 : 10));
    const [phone, select, tablet] = await Promise.all([
      ahead(0).then(() => t!.act(pickerId, { token: token("phone") })),
      ahead(1).then(() => laptop.request("picker.select", { picker_id: pickerId, option_id: "deny" })),
      ahead(2).then(() => t!.act(pickerId, { token: token("tablet") })),
    ]);
    const resolved = select.payload as Record<string, unknown>;
    expect(select.type).toBe("picker.resolved");
    const won = [
      phone.status === 200 && "phone",
      resolved.device_id === "laptop" && "laptop",
      tablet.status === 200 && "tablet",
    ];
    expect(won.filter(Boolean)).toHaveLength(1);
    expect([phone.status, tablet.status].every((s) => s === 200 || s === 410)).toBe(true);
    // Whoever won, all three were told the same outcome.
    if (phone.status === 200) expect(phone.body).toEqual(resolved);
    if (tablet.status === 200) expect(tablet.body).toEqual(resolved);
    winners.push(won.find(Boolean) as string);
  }
  await until(() => answers.length === ASKS && watcher.of("picker.resolved").length >= ASKS);
  expect(answers.map((a) => a.i)).toEqual(Array.from({ length: ASKS }, (_, i) => i));
  const delivered = watcher.of("picker.resolved").map((f) => f.payload.picker_id);
  expect(new Set(delivered).size).toBe(ASKS);
  expect(delivered).toHaveLength(ASKS);
  const stored = await storage.readOutbox(ANONYMOUS_OWNER, 0, 10_000, ["picker.resolved"]);
  expect(stored).toHaveLength(ASKS);
  expect(new Set(stored.map((e) => e.payload.picker_id)).size).toBe(ASKS);
  // Each runtime answer is the winner's choice.
  expect(answers.map((a) => a.answer)).toEqual(
    winners.map((w) => ({ outcome: "selected", option_id: w === "laptop" ? "deny" : "approve" })),
  );
});

const sharedAvailable =
  (await postgresAvailable("action race: postgres + redis")) && (await redisAvailable("action race: postgres + redis"));

describe.skipIf(!sharedAvailable)("two processes over PostgreSQL and Redis", () => {
  const nodes: ActionHarness[] = [];
  const clients: Redis[] = [];
  let schema: string | undefined;
  afterEach(async () => {
    for (const n of nodes.splice(0)) await n.close();
    for (const c of clients.splice(0)) c.disconnect();
    if (schema) await dropSchema(schema);
    schema = undefined;
  });

  /** One gateway as a process of its own would run it: its own pool, Redis clients, bus and lane lock. */
  async function node(runtime: ReturnType<typeof scriptedRuntime>, prefix: string): Promise<ActionHarness> {
    const storage = postgresStorage({ connectionString: DATABASE_URL, schema: schema!, poolSize: 3 });
    const redis = new Redis(REDIS_URL);
    clients.push(redis);
    const bus = redisBus(redis, { prefix, storage, warn: () => undefined });
    await bus.ready();
    const made = await actionHarness({ runtime, storage, bus, laneLock: redisLaneLock(redis, { prefix }) });
    nodes.push(made);
    return made;
  }

  it("action race - 50 asks held by one process, answered at once by two buttons and a picker.select through the other, resolve exactly once each", async () => {
    schema = `t_${runId()}`;
    const prefix = `cg-race-${runId()}:`;
    const answers: AskAnswer[] = [];
    const runtime = scriptedRuntime(async function* (input) {
      for (let i = 0; i < ASKS; i++) answers.push(await input.ask({ kind: "approval", title: `step ${i}` }));
      yield { type: "text", delta: "done" };
    });
    const a = await node(runtime, prefix);
    const b = await node(runtime, prefix);
    for (const id of ["phone", "tablet"])
      await (await Client.connect(a.h.url, { device_id: id, caps: { push: "rec" } })).close();
    const laptop = await Client.connect(a.h.url, { device_id: "laptop", caps: { pickers: true } });
    const other = await Client.connect(b.h.url, { device_id: "desk", caps: { pickers: true } });
    await laptop.request("message.send", { chat_id: "default", text: "go" });
    const seen = new Set<string>();
    let won = 0;
    for (let i = 0; i < ASKS; i++) {
      const fresh = () => a.pushes.filter((p) => p.message.actions && !seen.has(p.message.picker_id!));
      await until(() => fresh().length === 2);
      const pushes = fresh();
      const pickerId = pushes[0]!.message.picker_id!;
      seen.add(pickerId);
      const token = (device: string) => pushes.find((p) => p.device_id === device)!.message.actions![0]!.token;
      const ahead = (k: number) => new Promise((r) => setTimeout(r, k === i % 3 ? 0 : 10));
      const [phone, select, tablet] = await Promise.all([
        ahead(0).then(() => b.act(pickerId, { token: token("phone") })),
        ahead(1).then(() => other.request("picker.select", { picker_id: pickerId, option_id: "deny" })),
        ahead(2).then(() => b.act(pickerId, { token: token("tablet") })),
      ]);
      const winners = [phone.status === 200, select.payload.device_id === "desk", tablet.status === 200];
      expect(winners.filter(Boolean)).toHaveLength(1);
      won += winners[0] || winners[2] ? 1 : 0;
    }
    await until(() => answers.length === ASKS);
    expect(answers).toHaveLength(ASKS);
    const storage = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 1 });
    await storage.open();
    try {
      const stored = await storage.readOutbox(ANONYMOUS_OWNER, 0, 10_000, ["picker.resolved"]);
      expect(stored).toHaveLength(ASKS);
      expect(new Set(stored.map((e) => e.payload.picker_id)).size).toBe(ASKS);
    } finally {
      await storage.close();
    }
    expect(answers.filter((x) => x.option_id === "approve")).toHaveLength(won);
  }, 240_000);
});
