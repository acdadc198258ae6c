// `schedule add|list|remove|run` of the example server against the running server (sql.js, which
// holds its data folder), through the admin socket: bad cron and time zone refused with nothing
// made, a 2-second schedule that runs, `run` now, removal; per user with login on.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "../gateway/harness.js";
import { startServerProcess, type ServerProcess } from "../example-server-process.js";
import { HASHES, writeUsers } from "../http/helpers.js";
import { until } from "../../adapters/testing/wait.js";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** `main.ts schedule ...` as a person runs it, while the server runs. */
function scheduleCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(...exampleServerCommand(["schedule", ...args]), {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, ...env },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, out, err })));
}

describe("schedule CLI", () => {
  it("adds, lists, runs and removes schedules of a running sql.js server; answers land in the automation channel", {
    timeout: 240_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-sched-"));
    const env = { GATEWAY_DATA_DIR: dataDir, GATEWAY_DEMO_DELAY_MS: "0" };
    server = await startServerProcess(env);
    const badCron = await scheduleCli(
      ["add", "x", "--cron", "61 * * * *", "--channel", "Reports", "--prompt", "p"],
      env,
    );
    expect([badCron.code, badCron.err.trim()]).toEqual([1, 'invalid cron "61 * * * *": Invalid value for minute: 61']);
    const badTz = await scheduleCli(
      ["add", "x", "--cron", "0 9 * * *", "--tz", "Mars/Base", "--channel", "Reports", "--prompt", "p"],
      env,
    );
    expect([badTz.code, badTz.err.trim()]).toEqual([
      1,
      'unknown time zone "Mars/Base": use an IANA name such as UTC or Europe/Berlin',
    ]);
    expect((await scheduleCli(["add", "x", "--cron", "0 9 * * *", "--channel", "Reports"], env)).code).toBe(2);

    const added = await scheduleCli(
      ["add", "tick", "--cron", "*/2 * * * * *", "--channel", "Reports", "--prompt", "status please"],
      env,
    );
    expect(added.code).toBe(0);
    expect(added.out).toMatch(/^schedule: tick\nnext_run: \d{4}-\d\d-\d\dT\d\d:\d\d:\d[02468]\.000Z\n$/);
    expect(
      (
        await scheduleCli(
          [
            "add",
            "daily",
            "--cron",
            "0 9 * * *",
            "--tz",
            "Europe/Berlin",
            "--channel",
            "Reports",
            "--prompt",
            "daily digest",
          ],
          env,
        )
      ).code,
    ).toBe(0);
    await until(async () => (await scheduleCli(["list"], env)).out.includes("\tok at "), "a tick to run", 30_000);
    const ran = await scheduleCli(["run", "daily"], env);
    expect(ran.out).toMatch(/^prompt_id: m/);
    await until(
      async () =>
        /^daily\tReports\t0 9 \* \* \*\tEurope\/Berlin\t\S+\tok at /m.test((await scheduleCli(["list"], env)).out),
      "the daily run",
      30_000,
    );
    expect((await scheduleCli(["remove", "tick"], env)).code).toBe(0);
    const missing = await scheduleCli(["remove", "tick"], env);
    expect([missing.code, missing.err.trim()]).toEqual([1, 'no schedule named "tick"']);
    expect((await scheduleCli(["list"], env)).out).not.toContain("tick\t");

    // What a device sees: one automation channel, with the prompts and their answers.
    const device = await Client.connect(server.ws);
    const channels = (await device.request("channel.list")).payload.channels as Array<{
      chat_id: string;
      name: string;
      automation?: boolean;
    }>;
    const reports = channels.filter((c) => c.name === "Reports");
    expect(reports).toEqual([expect.objectContaining({ automation: true })]);
    const page = await device.request("history", { chat_id: reports[0]!.chat_id, limit: 200 });
    const messages = page.payload.messages as Array<{
      role: string;
      text: string;
      reply_to?: string;
      message_id: string;
    }>;
    const digest = messages.find((m) => m.message_id === /prompt_id: (\S+)/.exec(ran.out)![1])!;
    expect(digest.text).toBe("daily digest");
    expect(messages.some((m) => m.role === "assistant" && m.reply_to === digest.message_id)).toBe(true);
    await device.close();
  });

  it("with login on, schedules belong to the user named by --user", { timeout: 180_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-sched-"));
    await writeUsers(join(dataDir, "users.json"), { alice: HASHES["alice-password"] });
    const env = { GATEWAY_DATA_DIR: dataDir };
    server = await startServerProcess(env);
    const args = ["add", "daily", "--cron", "0 9 * * *", "--channel", "Reports", "--prompt", "digest"];
    expect((await scheduleCli(args, env)).code).toBe(2);
    expect((await scheduleCli([...args, "--user", "bob"], env)).code).toBe(1);
    expect((await scheduleCli([...args, "--user", "alice"], env)).code).toBe(0);
    expect((await scheduleCli(["list", "--user", "alice"], env)).out).toMatch(
      /^daily\tReports\t0 9 \* \* \*\tUTC\t\S+Z\tnever\n$/,
    );
  });
});
