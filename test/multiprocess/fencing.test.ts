// Ownership is fenced (docs/PROTOCOL.md §4.2), on real example-server processes sharing PostgreSQL
// and Redis: a process paused past its lane lease (SIGSTOP, as a long GC pause or a frozen VM
// would) loses the lane to another, and once it resumes it writes and sends nothing more for that
// lane; Redis restarted empty under load answers nothing twice. After
// each fault: every acknowledged message stored once with exactly one final answer, none
// streaming, one final frame per answer, no frame of an answer after its final and no seq twice on
// any device.
import { describe, expect, test } from "vitest";
import { Client } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { clusterFor } from "./cluster.js";
import { expectDeviceWhole, expectStoredOnce, settled, watchStreaming } from "./invariants.js";

const available = (await postgresAvailable("fencing")) && (await redisAvailable("fencing"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A free loopback port. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server of this test's own, empty, without persistence (never the machine's). */
async function ownRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    "/usr/bin/redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("Ready to accept connections")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
  });
  return child;
}

async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

describe.skipIf(!available)(
  "fencing - PostgreSQL and Redis, several processes",
  { concurrent: true, timeout: 300_000 },
  () => {
    test("fencing - a process paused past its lane lease writes and sends nothing more for that lane once it resumes", async (context) => {
      const cluster = clusterFor(context);
      // One after the other: two servers compiling at once on a loaded machine start slowly.
      const a = await cluster.start("A", { GATEWAY_DEMO_DELAY_MS: "150" });
      const b = await cluster.start("B", { GATEWAY_DEMO_DELAY_MS: "0" });
      const onA = await Client.connect(a.ws);
      const onB = await Client.connect(b.ws);
      const streaming = watchStreaming(cluster);
      const long = await onA.request("message.send", { chat_id: "default", text: words(40) });
      const start = await onB.waitFor(
        (f) => f.type === "message.start" && f.payload.reply_to === long.payload.message_id,
        10_000,
      );
      const paused = start.payload.message_id as string;
      await onB.waitFor((f) => f.type === "message.update" && f.payload.message_id === paused, 10_000);
      a.child.kill("SIGSTOP");
      try {
        // Past the lease (1.5 s in the cluster): B takes the lane for the next message, ending A's answer.
        await sleep(3_000);
        const next = await onB.request("message.send", { chat_id: "default", text: "after the pause" });
        await onB.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === next.payload.message_id, 20_000);
      } finally {
        a.child.kill("SIGCONT");
      }
      // A's runtime had about 6 s of answer left: long enough for everything it would still do.
      await sleep(8_000);
      const all = await settled(cluster);
      expect(await streaming.stop(), "answers streaming at once in one lane").toBeLessThanOrEqual(1);
      await expectStoredOnce(cluster, all);
      expect(all.find((r) => r.message_id === paused)?.status).toBe("interrupted");
      for (const device of [onA, onB]) expectDeviceWhole(device);
      // And A still works: a new turn of its own runs to the end.
      const again = await onA.request("message.send", { chat_id: "default", text: "A again" });
      const end = await onA.waitFor(
        (f) => f.type === "message.stop" && f.payload.reply_to === again.payload.message_id,
        20_000,
      );
      expect(end.payload.status).toBe("complete");
    });
    test("fencing - Redis stopped and started again empty under load: every message answered once, no seq twice, no frame after a final", async (context) => {
      const port = await freePort();
      let redis = await ownRedis(port);
      // Its processes are stopped when the test ends, after its own Redis below.
      const cluster = clusterFor(context);
      try {
        const env = { REDIS_URL: `redis://127.0.0.1:${port}`, GATEWAY_DEMO_DELAY_MS: "40" };
        const a = await cluster.start("A", env);
        const b = await cluster.start("B", env);
        const devices = [await Client.connect(a.ws), await Client.connect(b.ws), await Client.connect(a.ws)];
        const lanes = ["default"];
        lanes.push(
          (await devices[1].request("channel.create", { name: "two", kind: "channel" })).payload.chat_id as string,
        );
        const acknowledged: string[] = [];
        const streaming = watchStreaming(cluster);
        let sending = true;
        const senders = devices.map(async (device, d) => {
          for (let i = 0; sending; i++) {
            const id = `d${d}-${i}`;
            await device
              .request("message.send", {
                chat_id: lanes[(d + i) % lanes.length],
                text: words(10 + d),
                client_msg_id: id,
              })
              .then((r) => r.type === "message" && acknowledged.push(id))
              .catch(() => undefined);
            await sleep(150);
          }
        });
        await sleep(2_000);
        await stopRedis(redis);
        await sleep(5_000);
        redis = await ownRedis(port);
        await sleep(3_000);
        sending = false;
        await Promise.all(senders);
        const all = await settled(cluster, 90_000);
        expect(all.filter((r) => r.role === "user").length).toBeGreaterThan(3);
        expect(await streaming.stop(), "answers streaming at once in one lane").toBeLessThanOrEqual(1);
        await expectStoredOnce(cluster, all, acknowledged);
        for (const device of devices) expectDeviceWhole(device);
      } finally {
        await stopRedis(redis);
      }
    });
  },
);
