// Three gateway processes on one PostgreSQL schema and one Redis prefix, all of an owner's devices on
// A: while A streams that owner's answers, B and C (no device of hers) read next to nothing from
// Redis. Each process reaches Redis through a relay of its own that counts what it reads, and its
// CPU time comes from /proc.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Client } from "../gateway/harness.js";
import { REDIS_URL, postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { slowLink, type SlowLink } from "../fixtures/slow-link.js";
import { createCluster, type Cluster, type GatewayProcess } from "./cluster.js";

const available = (await postgresAvailable("owner traffic")) && (await redisAvailable("owner traffic"));

const PASSWORD = "correct horse battery";
const ANSWERS = 20;
/** The demo answers `You said: <text>`: 2,000 characters in all. */
const QUESTION = "x".repeat(2_000 - "You said: ".length);
/** Messages sent ahead of the answer streaming, so the durable queue holds some (at most 16 turns per owner). */
const IN_FLIGHT = 4;

/** CPU seconds (user and system, every thread) the process has spent so far; undefined without /proc. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

describe.skipIf(!available)(
  "processes without an owner's devices and that owner's traffic",
  { timeout: 240_000 },
  () => {
    let cluster: Cluster;
    const links: SlowLink[] = [];
    const processes: GatewayProcess[] = [];
    const devices: Client[] = [];

    beforeAll(async () => {
      cluster = createCluster();
      cluster.addUser("alice", PASSWORD);
      const { hostname, port } = new URL(REDIS_URL);
      for (const name of ["A", "B", "C"]) {
        const link = await slowLink({ host: hostname, port: Number(port || 6379) }, 0);
        links.push(link);
        // 2,000 characters in 200 deltas, 5 ms apart: twenty answers take several recovery rounds (5 s each).
        processes.push(await cluster.start(name, { REDIS_URL: link.url, GATEWAY_DEMO_DELAY_MS: "5" }));
      }
    }, 120_000);

    afterAll(async () => {
      for (const c of devices) await c.close().catch(() => undefined);
      await cluster?.destroy();
      for (const link of links) await link.close();
    }, 30_000);

    test("owner traffic - while A streams 20 answers of 2,000 characters to an owner whose devices are all on A, B and C each read under 10% of A's Redis bytes", async () => {
      const [a] = processes;
      const res = await fetch(`${a.base}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "alice", password: PASSWORD }),
      });
      const { token } = (await res.json()) as { token: string };
      for (let i = 0; i < 2; i++) devices.push(await Client.connect(a.ws, {}, { authorization: `Bearer ${token}` }));
      const [phone] = devices;

      const readBefore = links.map((l) => l.bytesRead());
      const cpuBefore = processes.map((p) => cpuSeconds(p.child.pid!));
      const sent: string[] = [];
      const answered = async (i: number) =>
        phone.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === sent[i], 60_000);
      for (let i = 0; i < ANSWERS; i++) {
        if (i >= IN_FLIGHT) await answered(i - IN_FLIGHT);
        const echo = await phone.request("message.send", { chat_id: "default", text: QUESTION }, 10_000);
        expect(echo.type).toBe("message");
        sent.push(echo.payload.message_id as string);
      }
      for (let i = ANSWERS - IN_FLIGHT; i < ANSWERS; i++) await answered(i);
      // Both devices hold every answer whole: they were streamed on A.
      for (const d of devices) {
        for (const id of sent) {
          const stop = await d.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === id, 10_000);
          expect(stop.payload.status).toBe("complete");
          expect((stop.payload.final_text as string).length).toBe(2_000);
        }
      }

      const read = links.map((l, i) => l.bytesRead() - readBefore[i]);
      const cpu = processes.map((p, i) => (cpuSeconds(p.child.pid!) ?? 0) - (cpuBefore[i] ?? 0));
      console.log(
        `owner traffic: Redis bytes read A ${read[0]}, B ${read[1]}, C ${read[2]}; CPU seconds A ${cpu[0].toFixed(2)}, B ${cpu[1].toFixed(2)}, C ${cpu[2].toFixed(2)}`,
      );
      // A read its own stream back from alice's channel (her devices are there): at least the text.
      expect(read[0]).toBeGreaterThan(ANSWERS * 2_000);
      expect(read[1]).toBeLessThan(read[0] * 0.1);
      expect(read[2]).toBeLessThan(read[0] * 0.1);
    });
  },
);
