// `turn.stop` through another process (docs/PROTOCOL.md §4.2, §14.4), on real example-server
// processes sharing PostgreSQL and Redis: a turn running on A longer than a recovery tick is stopped
// by a device on B. The other processes' recovery must not take the running answer for an orphan:
// `turn.stopped` names the answer, and it ends once, `stopped`.
import { describe, expect, test } from "vitest";
import { Client } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { clusterFor } from "./cluster.js";
import { expectDeviceWhole, expectStoredOnce, settled, watchStreaming } from "./invariants.js";

const available = (await postgresAvailable("stop")) && (await redisAvailable("stop"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

describe.skipIf(!available)("stop - across processes", { concurrent: true, timeout: 300_000 }, () => {
  test("stop - a turn on A running past a recovery tick, stopped through B, ends once `stopped` and turn.stopped names it", async (context) => {
    const cluster = clusterFor(context);
    // About 40 pieces 200 ms apart: an answer of some 8 s, longer than the 5 s recovery tick.
    const a = await cluster.start("A", { GATEWAY_DEMO_DELAY_MS: "200" });
    const b = await cluster.start("B", { GATEWAY_DEMO_DELAY_MS: "0" });
    const onA = await Client.connect(a.ws);
    const onB = await Client.connect(b.ws);
    const streaming = watchStreaming(cluster);
    const long = await onA.request("message.send", { chat_id: "default", text: words(100) });
    const start = await onB.waitFor(
      (f) => f.type === "message.start" && f.payload.reply_to === long.payload.message_id,
      15_000,
    );
    const answer = start.payload.message_id as string;
    // Past a recovery tick of every process (5 s), while A still streams.
    await sleep(5_500);
    expect(onB.frames.some((f) => f.type === "message.stop" && f.payload.message_id === answer)).toBe(false);
    const stopped = await onB.request("turn.stop", { chat_id: "default" });
    expect(stopped.type).toBe("turn.stopped");
    expect(stopped.payload.message_id).toBe(answer);
    const end = await onB.waitFor((f) => f.type === "message.stop" && f.payload.message_id === answer, 15_000);
    // A user's stop, wherever the turn runs: `stopped` (docs/PROTOCOL.md §14.4), not a crash's `interrupted`.
    expect(end.payload.status).toBe("stopped");
    // What A's runtime had left of the answer, and more: nothing else may end it.
    await sleep(5_000);
    const all = await settled(cluster);
    expect(await streaming.stop()).toBeLessThanOrEqual(1);
    await expectStoredOnce(cluster, all);
    expect(all.find((r) => r.message_id === answer)?.status).toBe("stopped");
    for (const device of [onA, onB]) {
      expectDeviceWhole(device);
      expect(device.frames.filter((f) => f.type === "message.stop" && f.payload.message_id === answer)).toHaveLength(1);
    }
  });

  test("stop - a holder alive but too slow to confirm a stop: the stop fails closed, the answer ends once `stopped` and its holder writes nothing more", async (context) => {
    const cluster = clusterFor(context);
    // A lease long enough that the pause below does not cost A its lane: A is slow, not gone.
    const lease = { GATEWAY_LANE_TTL_MS: "20000" };
    const a = await cluster.start("A", { ...lease, GATEWAY_DEMO_DELAY_MS: "200" });
    const b = await cluster.start("B", { ...lease, GATEWAY_DEMO_DELAY_MS: "0" });
    const onA = await Client.connect(a.ws);
    const onB = await Client.connect(b.ws);
    const long = await onA.request("message.send", { chat_id: "default", text: words(100) });
    const start = await onB.waitFor(
      (f) => f.type === "message.start" && f.payload.reply_to === long.payload.message_id,
      15_000,
    );
    const answer = start.payload.message_id as string;
    await onB.waitFor((f) => f.type === "message.update" && f.payload.message_id === answer, 10_000);
    a.child.kill("SIGSTOP");
    let stopped: Awaited<ReturnType<Client["request"]>>;
    try {
      // A cannot confirm within the relay's wait (1.5 s): B ends the answer itself.
      stopped = await onB.request("turn.stop", { chat_id: "default" }, 10_000);
      await sleep(1_000);
    } finally {
      a.child.kill("SIGCONT");
    }
    expect(stopped.type).toBe("turn.stopped");
    expect(stopped.payload.message_id).toBe(answer);
    const end = await onB.waitFor((f) => f.type === "message.stop" && f.payload.message_id === answer, 15_000);
    expect(end.payload.status).toBe("stopped");
    // What A's runtime had left of the answer: it must neither store nor send any of it.
    await sleep(8_000);
    const all = await settled(cluster);
    await expectStoredOnce(cluster, all);
    expect(all.find((r) => r.message_id === answer)?.status).toBe("stopped");
    for (const device of [onA, onB]) {
      expectDeviceWhole(device);
      expect(device.frames.filter((f) => f.type === "message.stop" && f.payload.message_id === answer)).toHaveLength(1);
    }
    // And A still answers in the lane.
    const again = await onA.request("message.send", { chat_id: "default", text: "A again" });
    const next = await onA.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === again.payload.message_id,
      20_000,
    );
    expect(next.payload.status).toBe("complete");
  });
});
