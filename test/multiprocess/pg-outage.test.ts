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
    // Answers of about 0.3 s, a message a second from each of six devices into two lanes: the lanes
    // are busy most of the time (the cut lands mid-answer) but keep up.
    const env = { DATABASE_URL: proxy.url, GATEWAY_DEMO_DELAY_MS: "25" };
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
          .request("message.send", { chat_id: lanes[(d + i) % lanes.length], text: words(18 + d), client_msg_id: id })
          .then((r) => r.type === "message" && acknowledged.push(id))
          .catch(() => undefined);
        await sleep(1_000);
      }
    });
    const streaming = watchStreaming(cluster);
    // A process that died is the first thing to know about (the end of the test kills them all).
    for (const p of procs)
      p.child.once("exit", (code) => {
        if (code !== null) console.error(`${p.name} exited ${code}:\n${p.output().slice(-4000)}`);
      });
    await sleep(3_000);
    proxy.cut();
    await sleep(5_000);
    proxy.restore();
    await sleep(4_000);
    sending = false;
    await Promise.all(senders);
    await settled(cluster, 120_000);
    // No process died of the outage (a connection that broke while checked out of the pool once
    // threw an unhandled error).
    for (const p of procs) expect(p.child.exitCode, `${p.name} exited`).toBeNull();
    for (const [d, device] of devices.entries()) expect(device.closeCode, `device ${d} closed`).toBeUndefined();
    // Once the backlog is answered, every process serves again at the first try: no turn of the
    // outage is left counted in flight, no connection the outage broke is handed out.
    for (const [d, device] of devices.entries()) {
      const after = await device.request("message.send", {
        chat_id: lanes[d % 2],
        text: "after",
        client_msg_id: `after-${d}`,
      });
      expect(after.type, JSON.stringify(after.payload)).toBe("message");
      acknowledged.push(`after-${d}`);
    }
    const all = await settled(cluster, 120_000);
    // Some time for anything a process would still send after the stored end.
    await sleep(2_000);
    expect(await streaming.stop()).toBeLessThanOrEqual(1);
    expect(acknowledged.length).toBeGreaterThan(10);
    await expectStoredOnce(cluster, all, acknowledged);
    for (const device of devices) expectDeviceWhole(device);
  });
});
