// Crash recovery under a kill run (issue 47 item 14, docs/PROTOCOL.md §4.2): three real
// example-server processes on PostgreSQL and Redis, 12 devices sending into 4 lanes, one process
// SIGKILLed every 6 s for 60 s and started again. Devices of a killed process reconnect to a live
// one and send again what was not acknowledged, with the same client_msg_id. Afterwards every
// acknowledged message is stored once with exactly one final answer, nothing streams or waits, no
// device saw a seq twice or a frame of an answer after its final, and no lane ever streamed two
// answers at once.
import { afterEach, describe, expect, test } from "vitest";
import { Client } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { createCluster, type Cluster, type GatewayProcess } from "./cluster.js";
import { expectDeviceWhole, expectStoredOnce, settled, watchStreaming } from "./invariants.js";

const available = (await postgresAvailable("kill run")) && (await redisAvailable("kill run"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

let cluster: Cluster | undefined;
afterEach(async () => {
  await cluster?.destroy();
  cluster = undefined;
});

/** The processes by slot; a slot is empty while its process is down. */
type Slots = Array<GatewayProcess | undefined>;

function alive(slots: Slots, avoid?: number): GatewayProcess {
  const live = slots.filter((p, i): p is GatewayProcess => p !== undefined && i !== avoid);
  return live[Math.floor(Math.random() * live.length)] ?? slots.find((p) => p !== undefined)!;
}

describe.skipIf(!available)("kill run - three processes", { timeout: 240_000 }, () => {
  test("kill run - one process killed every 6 s for 60 s: every acknowledged message answered once, none left streaming", async () => {
    cluster = createCluster();
    // Answers of about 1 s, so kills land mid-turn and lanes have messages waiting.
    const env = { GATEWAY_DEMO_DELAY_MS: "100" };
    const c = cluster;
    const slots: Slots = [await c.start("P0", env), await c.start("P1", env), await c.start("P2", env)];
    const first = await Client.connect(slots[0]!.ws);
    const lanes = ["default"];
    for (const name of ["two", "three", "four"])
      lanes.push((await first.request("channel.create", { name, kind: "channel" })).payload.chat_id as string);
    const connections: Client[] = [first];
    const acknowledged: string[] = [];
    let sending = true;
    const device = async (d: number) => {
      let client = await Client.connect(slots[d % 3]!.ws);
      connections.push(client);
      for (let i = 0; sending; i++) {
        const id = `d${d}-${i}`;
        const payload = { chat_id: lanes[d % 4], text: words(20 + (i % 5)), client_msg_id: id };
        for (let attempt = 0; attempt < 20; attempt++) {
          const r = await client.request("message.send", payload, 10_000).catch(() => undefined);
          if (r?.type === "message") {
            acknowledged.push(id);
            break;
          }
          if (client.closeCode === undefined && r !== undefined) break;
          // Its process died: reconnect to a live one and send the same message again.
          await sleep(300);
          client = await Client.connect(alive(slots).ws).catch(() => client);
          if (!connections.includes(client)) connections.push(client);
        }
        await sleep(400 + Math.random() * 400);
      }
    };
    const devices = Array.from({ length: 12 }, (_, d) => device(d));
    const streaming = watchStreaming(c);
    const restarts: Array<Promise<void>> = [];
    for (let k = 0; k < 10; k++) {
      await sleep(6_000);
      const slot = k % 3;
      const victim = slots[slot];
      if (!victim) continue;
      slots[slot] = undefined;
      await victim.kill();
      restarts.push(
        c.start(`P${slot}-${k}`, env).then((p) => {
          slots[slot] = p;
        }),
      );
    }
    await Promise.all(restarts);
    sending = false;
    await Promise.all(devices);
    const all = await settled(c, 120_000);
    console.log(
      `kill run: ${acknowledged.length} acknowledged, ${all.length} stored, ${connections.length} connections`,
    );
    await sleep(2_000);
    expect(await streaming.stop()).toBeLessThanOrEqual(1);
    expect(acknowledged.length).toBeGreaterThan(50);
    await expectStoredOnce(c, all, acknowledged);
    for (const connection of connections) expectDeviceWhole(connection);
  });
});
