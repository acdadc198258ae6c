// The durable turn queue across processes (PostgreSQL + Redis, the example server): a process killed
// with SIGKILL mid-answer leaves a lane that another process takes over within the lane lease's
// time; `/stop` reaches a turn running in another process; and a seeded fault run kills processes
// at random under load, after which nothing acknowledged is lost, doubled or left streaming.
import { afterEach, describe, expect, test } from "vitest";
import { Client, type Frame } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { createCluster, type Cluster, type GatewayProcess } from "../multiprocess/cluster.js";

const available =
  (await postgresAvailable("turn queue across processes")) && (await redisAvailable("turn queue across processes"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: Cluster | undefined;
afterEach(async () => {
  await cluster?.destroy();
  cluster = undefined;
});

interface Row {
  message_id: string;
  role: string;
  status: string | null;
  reply_to: string | null;
  text: string;
  ts: string;
}

/** Every message of the cluster's schema, oldest first, straight from PostgreSQL. */
async function rows(c: Cluster): Promise<Row[]> {
  return (await c.query(
    "SELECT message_id, role, status, data::json ->> 'reply_to' AS reply_to, text, ts FROM messages ORDER BY ts, message_id",
  )) as Row[];
}

/** Polls until every user message has an answer and nothing streams or waits; returns the rows. */
async function settled(c: Cluster, ms = 45_000): Promise<Row[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const all = await rows(c);
    const users = all.filter((r) => r.role === "user");
    const answered = new Set(
      all.filter((r) => r.role === "assistant" && r.status !== "streaming").map((r) => r.reply_to),
    );
    if (
      users.every((u) => answered.has(u.message_id) && u.status !== "waiting") &&
      !all.some((r) => r.status === "streaming")
    )
      return all;
    if (Date.now() > deadline)
      throw new Error(
        `not settled: ${JSON.stringify(all.filter((r) => r.status === "streaming" || r.status === "waiting"))}`,
      );
    await sleep(200);
  }
}

/** Each user message has exactly one final answer. */
function expectAnsweredOnce(all: Row[]): void {
  const answers = new Map<string, number>();
  for (const r of all)
    if (r.role === "assistant" && r.reply_to) answers.set(r.reply_to, (answers.get(r.reply_to) ?? 0) + 1);
  for (const u of all.filter((r) => r.role === "user"))
    expect(answers.get(u.message_id), `answers to ${u.text}`).toBe(1);
}

describe.skipIf(!available)("turn queue - PostgreSQL and Redis, several processes", { timeout: 180_000 }, () => {
  test("turn queue - a process killed mid-answer: another ends its answer interrupted and answers its waiting messages in order", async () => {
    cluster = createCluster();
    const [a, b] = await Promise.all([
      cluster.start("A", { GATEWAY_DEMO_DELAY_MS: "150" }),
      cluster.start("B", { GATEWAY_DEMO_DELAY_MS: "0" }),
    ]);
    const onA = await Client.connect(a.ws);
    const onB = await Client.connect(b.ws);
    const long = Array.from({ length: 80 }, (_, i) => `word${i}`).join(" ");
    const echoes: Frame[] = [await onA.request("message.send", { chat_id: "default", text: long })];
    for (let i = 1; i <= 3; i++)
      echoes.push(await onA.request("message.send", { chat_id: "default", text: `waiting ${i}` }));
    await onB.waitFor((f) => f.type === "message.update", 10_000);
    await a.kill();

    const all = await settled(cluster);
    expectAnsweredOnce(all);
    const answers = all.filter((r) => r.role === "assistant");
    expect(answers.map((r) => r.reply_to)).toEqual(echoes.map((e) => e.payload.message_id));
    expect(answers[0].status).toBe("interrupted");
    expect(answers.slice(1).map((r) => r.text)).toEqual([
      "You said: waiting 1",
      "You said: waiting 2",
      "You said: waiting 3",
    ]);
    // B's device saw the interrupted end live.
    await onB.waitFor((f) => f.type === "message.stop" && f.payload.status === "interrupted", 5_000);
  });

  test("turn queue - /stop sent to another process stops the turn where it runs", async () => {
    cluster = createCluster();
    const [a, b] = await Promise.all([cluster.start("A", { GATEWAY_DEMO_DELAY_MS: "150" }), cluster.start("B")]);
    const onA = await Client.connect(a.ws);
    const onB = await Client.connect(b.ws);
    const echo = await onA.request("message.send", {
      chat_id: "default",
      text: Array.from({ length: 80 }, (_, i) => `w${i}`).join(" "),
    });
    await onB.waitFor((f) => f.type === "message.update", 10_000);
    const stop = await onB.request("message.send", { chat_id: "default", text: "/stop" });
    expect(stop.type).toBe("message");
    const end = await onB.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id,
      10_000,
    );
    expect(end.payload.status).toBe("stopped");
    // Nothing answered "Nothing is running here".
    await sleep(300);
    expect((await rows(cluster)).filter((r) => r.text.includes("Nothing is running"))).toEqual([]);
  });

  test("turn queue - seeded faults: processes killed at random under load lose, double and strand nothing", async () => {
    cluster = createCluster();
    const c = cluster;
    let seed = Number(process.env.FAULT_SEED ?? 20261127);
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    console.log(`fault test seed ${seed}`);
    const names = ["A", "B", "C"];
    const procs: Array<GatewayProcess | undefined> = await Promise.all(
      names.map((n) => c.start(n, { GATEWAY_DEMO_DELAY_MS: "20" })),
    );
    const setup = await Client.connect(procs[0]!.ws);
    const lanes = ["default"];
    for (const name of ["one", "two", "three"])
      lanes.push((await setup.request("channel.create", { name, kind: "channel" })).payload.chat_id as string);
    expect(lanes.every((l) => typeof l === "string")).toBe(true);
    await setup.close();

    const acknowledged = new Set<string>();
    let running = true;
    let sent = 0;
    // Six devices: each sends into its lanes, reconnecting to a live process when its own dies and
    // retrying an unacknowledged send with the same client_msg_id.
    const device = async (d: number) => {
      let client: Client | undefined;
      let pending: { key: string; chat_id: string } | undefined;
      while (running) {
        try {
          if (!client || client.closeCode !== undefined) {
            const live = procs.filter((p): p is GatewayProcess => p !== undefined);
            client = await Client.connect(live[Math.floor(random() * live.length)].ws);
          }
          pending ??= { key: `d${d}-${++sent}`, chat_id: lanes[d % lanes.length] };
          const echo = await client.request(
            "message.send",
            { chat_id: pending.chat_id, text: `load ${pending.key}`, client_msg_id: pending.key },
            8_000,
          );
          if (echo.type === "message") acknowledged.add(pending.key);
          pending = undefined;
          await sleep(150 + random() * 250);
        } catch {
          client = undefined;
          await sleep(100);
        }
      }
      await client?.close().catch(() => undefined);
    };
    const load = Promise.all([0, 1, 2, 3, 4, 5].map(device));
    let kills = 0;
    while (kills < 5) {
      await sleep(2_500 + random() * 2_000);
      const i = Math.floor(random() * procs.length);
      await procs[i]?.kill();
      kills++;
      procs[i] = undefined;
      procs[i] = await c.start(`${names[i]}${kills}`, { GATEWAY_DEMO_DELAY_MS: "20" });
    }
    running = false;
    await load;

    const all = await settled(c, 60_000);
    const users = all.filter((r) => r.role === "user");
    // Nothing acknowledged is lost, nothing is stored twice.
    const texts = users.map((u) => u.text.replace(/^load /, ""));
    for (const key of acknowledged) expect(texts).toContain(key);
    expect(new Set(texts).size).toBe(texts.length);
    expectAnsweredOnce(all);
    expect(acknowledged.size).toBeGreaterThan(20);
    // Every lane still answers.
    const live = procs.find((p) => p !== undefined)!;
    const after = await Client.connect(live.ws);
    for (const chat_id of lanes) {
      const echo = await after.request("message.send", { chat_id, text: `after ${chat_id}` });
      await after.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id, 20_000);
    }
  });
});
