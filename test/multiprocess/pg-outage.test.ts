// PostgreSQL goes away for 5 s under load and comes back (issue 47 item 15), on three real
// example-server processes sharing it and Redis: every connection of theirs is reset through a
// proxy the test cuts, as a fast shutdown drops them. What was acknowledged is answered once, and no
// device sees a seq twice or a frame of an answer after its final.
import { afterEach, describe, expect, test } from "vitest";
import { Client } from "../gateway/harness.js";
import { DATABASE_URL, postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { createCluster, type Cluster } from "./cluster.js";
import { expectDeviceWhole, expectStoredOnce, settled, watchStreaming } from "./invariants.js";
import { startPgProxy, type PgProxy } from "./pg-proxy.js";

const available = (await postgresAvailable("pg outage")) && (await redisAvailable("pg outage"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

let cluster: Cluster | undefined;
let proxy: PgProxy | undefined;
afterEach(async () => {
  await cluster?.destroy();
  await proxy?.close();
  cluster = undefined;
  proxy = undefined;
});

describe.skipIf(!available)("pg outage - three processes", { timeout: 300_000 }, () => {
  test("pg outage - the database down 5 s under load: acknowledged messages answered once, no seq twice, no frame after a final", async () => {
    proxy = await startPgProxy(DATABASE_URL);
    cluster = createCluster();
    const env = { DATABASE_URL: proxy.url, GATEWAY_DEMO_DELAY_MS: "60" };
    const procs = [await cluster.start("A", env), await cluster.start("B", env), await cluster.start("C", env)];
    const devices = await Promise.all(procs.flatMap((p) => [Client.connect(p.ws), Client.connect(p.ws)]));
    const lanes = ["default"];
    lanes.push(
      (await devices[1].request("channel.create", { name: "two", kind: "channel" })).payload.chat_id as string,
    );
    const acknowledged: string[] = [];
    let sending = true;
    const senders = devices.map(async (device, d) => {
      for (let i = 0; sending; i++) {
        const id = `d${d}-${i}`;
        await device
          .request("message.send", { chat_id: lanes[(d + i) % lanes.length], text: words(8 + d), client_msg_id: id })
          .then((r) => r.type === "message" && acknowledged.push(id))
          .catch(() => undefined);
        await sleep(250);
      }
    });
    const streaming = watchStreaming(cluster);
    await sleep(3_000);
    proxy.cut();
    await sleep(5_000);
    proxy.restore();
    await sleep(4_000);
    sending = false;
    await Promise.all(senders);
    const all = await settled(cluster, 120_000);
    // Some time for anything a process would still send after the stored end.
    await sleep(2_000);
    expect(await streaming.stop()).toBeLessThanOrEqual(1);
    expect(acknowledged.length).toBeGreaterThan(10);
    await expectStoredOnce(cluster, all, acknowledged);
    for (const device of devices) expectDeviceWhole(device);
  });
});
