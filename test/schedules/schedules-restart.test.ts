// Schedules across restarts on sql.js (docs/PROTOCOL.md §17), with the gateway's clock in the
// test's hand: after a downtime over seven slots only the newest missed slot runs, once; and a
// run whose process crashed mid-answer is answered after the restart (its prompt waited on the
// durable turn queue) and ends once, with its notification.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, createGateway, type AgentRuntime, type Gateway } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { until } from "../../adapters/testing/wait.js";
import { crashImage, removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

const owner = ANONYMOUS_OWNER;
const quiet = { info() {}, warn() {}, error() {} };
let open: Gateway[] = [];
afterEach(async () => {
  for (const g of open) await g.close();
  open = [];
  await removeTempDirs();
});

let clock = 0;
async function start(dir: string, runtime: AgentRuntime = demoRuntime({ delayMs: 0 })) {
  const sqljs = sqlJsStorage({ dir, logger: quiet });
  const gateway = createGateway({
    storage: sqljs,
    scheduleStore: sqljs,
    runtime,
    logger: quiet,
    now: () => clock,
    scheduler: { tickMs: 50 },
  });
  await gateway.start();
  open.push(gateway);
  const storage = gateway.options.storage as Storage;
  const lane = async (chatId: string) =>
    (await storage.history(owner, { chat_id: chatId, thread_id: null, limit: 100 }))!.messages;
  const cron = async () =>
    (await storage.readOutbox(owner, 0, 1000)).filter(
      (f) => f.type === "notification" && (f.payload as { kind: string }).kind === "cron",
    );
  const lastRun = async () => (await gateway.schedules.list(owner))[0]!.last_run;
  return { gateway, lane, cron, lastRun };
}

async function stop(gateway: Gateway): Promise<void> {
  open = open.filter((g) => g !== gateway);
  await gateway.close();
}

describe("schedules across restarts (sql.js)", () => {
  it("after a downtime over seven slots the newest missed slot runs once, then the next slot on time", async () => {
    const dir = await tempDir();
    clock = Date.parse("2026-01-01T10:00:30Z");
    const a = await start(dir);
    const channel = await a.gateway.channels.create(owner, { name: "Hourly", kind: "channel", automation: true });
    await a.gateway.schedules.add(owner, {
      name: "minutely",
      cron: "* * * * *",
      chat_id: channel.chat_id,
      prompt: "report",
    });
    await new Promise((r) => setTimeout(r, 200));
    await stop(a.gateway);
    expect((await (await start(dir)).gateway.schedules.list(owner))[0]!.last_run).toBeUndefined();
    await stop(open[0]!);

    clock = Date.parse("2026-01-01T10:07:30Z");
    const b = await start(dir);
    await until(async () => (await b.lastRun())?.status === "ok", "the missed slot to run", 10_000);
    // Many ticks on a frozen clock: still one run.
    await new Promise((r) => setTimeout(r, 500));
    expect(await b.lastRun()).toMatchObject({ slot: Date.parse("2026-01-01T10:07:00Z"), status: "ok" });
    expect((await b.lane(channel.chat_id)).map((m) => [m.role, m.ts])).toEqual([
      ["user", clock],
      ["assistant", clock],
    ]);
    clock = Date.parse("2026-01-01T10:08:01Z");
    await until(
      async () =>
        (await b.lastRun())?.slot === Date.parse("2026-01-01T10:08:00Z") && (await b.lastRun())?.status === "ok",
      "the next slot to run",
      10_000,
    );
    expect((await b.lane(channel.chat_id)).filter((m) => m.role === "user")).toHaveLength(2);
    expect(await b.cron()).toHaveLength(2);
  }, 60_000);

  it("a crash mid-run: the answer it cut ends interrupted and the run with it, a run waiting behind is answered after the restart; each ends once", async () => {
    const dir = await tempDir();
    clock = Date.parse("2026-01-01T10:00:30Z");
    const hanging: AgentRuntime = {
      async *turn({ signal }) {
        yield { type: "text", delta: "thinking" };
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
      },
    };
    const a = await start(dir, hanging);
    const channel = await a.gateway.channels.create(owner, { name: "Daily", kind: "channel", automation: true });
    await a.gateway.schedules.add(owner, {
      name: "first",
      cron: "0 9 * * *",
      chat_id: channel.chat_id,
      prompt: "the first summary",
    });
    await a.gateway.schedules.add(owner, {
      name: "second",
      cron: "0 9 * * *",
      chat_id: channel.chat_id,
      prompt: "the second summary",
    });
    const first = await a.gateway.schedules.run(owner, "first");
    await until(
      async () => (await a.lane(channel.chat_id)).some((m) => m.role === "assistant" && m.status === "streaming"),
      "the first run to stream",
      10_000,
    );
    const second = await a.gateway.schedules.run(owner, "second");
    // What a crash right now leaves on disk: the first answer streaming, the second prompt waiting behind it.
    const crashed = await crashImage(dir);
    await stop(a.gateway);

    const b = await start(crashed);
    const runs = async () =>
      Object.fromEntries((await b.gateway.schedules.list(owner)).map((s) => [s.name, s.last_run]));
    await until(
      async () => Object.values(await runs()).every((r) => r?.status !== "running"),
      "both runs to end after the restart",
      15_000,
    );
    const messages = await b.lane(channel.chat_id);
    expect(messages.map((m) => [m.role, m.role === "user" ? m.text : m.status, m.reply_to ?? null])).toEqual([
      ["user", "the first summary", null],
      ["assistant", "interrupted", first.prompt_id],
      ["user", "the second summary", null],
      ["assistant", "complete", second.prompt_id],
    ]);
    expect(await runs()).toMatchObject({
      first: {
        slot: first.slot,
        status: "error",
        error: "the answer ended interrupted",
        answer_id: messages[1]!.message_id,
      },
      second: { slot: second.slot, status: "ok", answer_id: messages[3]!.message_id },
    });
    await new Promise((r) => setTimeout(r, 300));
    expect((await b.cron()).map((f) => (f.payload as { title: string }).title).sort()).toEqual(["first", "second"]);
  }, 60_000);

  it("a turn-mode prompt (a webhook's, gateway.post) waiting when the process crashed is answered after the restart", async () => {
    const dir = await tempDir();
    clock = Date.parse("2026-01-01T10:00:30Z");
    const hanging: AgentRuntime = {
      async *turn({ signal }) {
        yield { type: "text", delta: "busy" };
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
      },
    };
    const a = await start(dir, hanging);
    const channel = await a.gateway.channels.create(owner, { name: "Hooks", kind: "channel", automation: true });
    const first = a.gateway.post(owner, channel.chat_id, { prompt: "first" });
    await until(
      async () => (await a.lane(channel.chat_id)).some((m) => m.status === "streaming"),
      "the first turn to stream",
      10_000,
    );
    const second = a.gateway.post(owner, channel.chat_id, { prompt: "second" });
    await until(
      async () => (await a.lane(channel.chat_id)).some((m) => m.text === "second" && m.waiting),
      "the second prompt to wait",
      10_000,
    );
    const crashed = await crashImage(dir);
    await stop(a.gateway);
    await Promise.allSettled([first, second]);

    const b = await start(crashed);
    await until(
      async () =>
        (await b.lane(channel.chat_id)).filter((m) => m.role === "assistant" && m.status !== "streaming").length === 2,
      "both prompts answered",
      15_000,
    );
    expect((await b.lane(channel.chat_id)).map((m) => [m.role, m.role === "user" ? m.text : m.status])).toEqual([
      ["user", "first"],
      ["assistant", "interrupted"],
      ["user", "second"],
      ["assistant", "complete"],
    ]);
  }, 60_000);
});
