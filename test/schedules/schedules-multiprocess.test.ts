// Schedules on two gateway processes (the example server) sharing PostgreSQL and Redis
// (docs/PROTOCOL.md §17): both tick every second, and each slot of a 2-second cron runs exactly
// once across them, answered once, with one cron notification.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { createCluster, type Cluster } from "../multiprocess/cluster.js";
import { until } from "../../adapters/testing/wait.js";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

const available =
  (await postgresAvailable("schedules across processes")) && (await redisAvailable("schedules across processes"));

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
  ts: string;
}

describe.runIf(available)("schedules across processes (PostgreSQL + Redis)", () => {
  test("each slot of a 2-second schedule runs once across two processes", { timeout: 180_000 }, async () => {
    cluster = createCluster();
    const c = cluster;
    const nodes = await Promise.all([
      c.start("A", { GATEWAY_DEMO_DELAY_MS: "0" }),
      c.start("B", { GATEWAY_DEMO_DELAY_MS: "0" }),
    ]);
    const cli = (args: string[]) =>
      spawnSync(...exampleServerCommand(["schedule", ...args]), {
        cwd: join(import.meta.dirname, "../.."),
        env: { ...process.env, GATEWAY_DATA_DIR: c.dataDir },
        encoding: "utf8",
      });
    const added = cli(["add", "tick", "--cron", "*/2 * * * * *", "--channel", "Reports", "--prompt", "status please"]);
    expect(added.status, `${added.stderr}${nodes.map((n) => n.output()).join("\n")}`).toBe(0);
    const messages = async () =>
      (await c.query(
        "SELECT message_id, role, status, data::json ->> 'reply_to' AS reply_to, ts FROM messages WHERE chat_id <> 'default' ORDER BY ts, message_id",
      )) as Row[];
    await until(async () => (await messages()).filter((m) => m.role === "assistant").length >= 4, "four runs", 60_000);
    expect(cli(["remove", "tick"]).status).toBe(0);
    const cron = async () =>
      ((await c.query("SELECT payload FROM outbox WHERE type = 'notification'")) as Array<{ payload: string }>).filter(
        (r) => JSON.parse(r.payload).kind === "cron",
      ).length;
    await until(
      async () => {
        const all = await messages();
        return (
          all.every((m) => m.status !== "waiting" && m.status !== "streaming") &&
          (await cron()) === all.filter((m) => m.role === "assistant").length
        );
      },
      "the last run to end",
      30_000,
    );
    const all = await messages();
    const prompts = all.filter((m) => m.role === "user");
    const answers = all.filter((m) => m.role === "assistant");
    // One prompt per 2-second slot however many processes tick, each answered exactly once.
    expect(new Set(prompts.map((p) => Math.floor(Number(p.ts) / 2000))).size).toBe(prompts.length);
    expect(answers.map((a) => a.reply_to).sort()).toEqual(prompts.map((p) => p.message_id).sort());
    expect(answers.every((a) => a.status === "complete")).toBe(true);
    expect(await cron()).toBe(prompts.length);
  });
});
