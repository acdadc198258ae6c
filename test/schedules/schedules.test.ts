// Schedules on one gateway (docs/PROTOCOL.md §17), memory storage, real timers: each slot of a
// 2-second cron runs once, its answer lands in the automation channel with a cron notification;
// bad cron, time zone and channel are refused clearly; a failing run stores an error answer; a
// run that still goes skips the next one.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type AgentRuntime } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { startGateway, type Harness } from "../gateway/harness.js";
import { until } from "../../adapters/testing/wait.js";

const waitFor = (check: () => Promise<boolean>, ms: number) => until(check, "the schedule to get there", ms);

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const owner = ANONYMOUS_OWNER;

async function setup(runtime: AgentRuntime = demoRuntime({ delayMs: 0 })) {
  h = await startGateway({ runtime, scheduler: { tickMs: 100 } });
  const gateway = h.gateway;
  const storage = gateway.options.storage as Storage;
  const channel = await gateway.channels.create(owner, { name: "Reports", kind: "channel", automation: true });
  const lane = async () =>
    (await storage.history(owner, { chat_id: channel.chat_id, thread_id: null, limit: 200 }))!.messages;
  const notifications = async () =>
    (await storage.readOutbox(owner, 0, 1000))
      .filter((f) => f.type === "notification")
      .map((f) => f.payload as Record<string, unknown>);
  return { gateway, storage, channel, lane, notifications };
}

describe("schedules on one process", () => {
  it("a cron every 2 seconds runs each slot once; each answer lands in the channel with a cron notification", async () => {
    const t = await setup();
    const added = await t.gateway.schedules.add(owner, {
      name: "tick",
      cron: "*/2 * * * * *",
      chat_id: t.channel.chat_id,
      prompt: "status please",
    });
    expect(added).toMatchObject({ name: "tick", tz: "UTC", last_slot: 0 });
    expect(added.next_run! % 2000).toBe(0);
    await waitFor(async () => (await t.lane()).filter((m) => m.role === "assistant").length >= 3, 15_000);
    const [listed] = await t.gateway.schedules.list(owner);
    expect(listed!.last_slot % 2000).toBe(0);
    expect(["ok", "running"]).toContain(listed!.last_run!.status);
    // Removed, it starts no run; the one it may have started is answered before the counts below.
    await t.gateway.schedules.remove(owner, "tick");
    const cronCount = async () => (await t.notifications()).filter((n) => n.kind === "cron").length;
    // The notification follows its stored answer.
    await waitFor(async () => {
      const lane = await t.lane();
      return (
        lane.every((m) => !m.waiting && m.status !== "streaming") &&
        (await cronCount()) === lane.filter((m) => m.role === "assistant").length
      );
    }, 10_000);
    const messages = await t.lane();
    const prompts = messages.filter((m) => m.role === "user");
    const answers = messages.filter((m) => m.role === "assistant");
    expect(prompts.every((p) => p.text === "status please")).toBe(true);
    // One prompt per slot (2 s apart), each answered once.
    const slots = prompts.map((p) => Math.floor(p.ts / 2000));
    expect(new Set(slots).size).toBe(prompts.length);
    expect(answers.map((a) => a.reply_to).sort()).toEqual(prompts.map((p) => p.message_id).sort());
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => "complete"));
    const cron = (await t.notifications()).filter((n) => n.kind === "cron");
    expect(cron.length).toBe(answers.length);
    expect(cron[0]).toMatchObject({ title: "tick", chat_id: t.channel.chat_id });
  }, 30_000);

  it("refuses a bad cron, an unknown time zone, a channel that is not an automation channel, an unknown one, and a bad name", async () => {
    const t = await setup();
    const base = { name: "x", cron: "0 9 * * *", chat_id: t.channel.chat_id, prompt: "p" };
    await expect(t.gateway.schedules.add(owner, { ...base, cron: "61 * * * *" })).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringMatching(/invalid cron "61 \* \* \* \*".*minute/),
    });
    await expect(t.gateway.schedules.add(owner, { ...base, cron: "* * * *" })).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringContaining("give 5 fields"),
    });
    await expect(t.gateway.schedules.add(owner, { ...base, cron: "0 0 0 * * * *" })).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringContaining("give 5 fields"),
    });
    await expect(t.gateway.schedules.add(owner, { ...base, tz: "Mars/Base" })).rejects.toMatchObject({
      code: "unsupported",
      message: 'unknown time zone "Mars/Base": use an IANA name such as UTC or Europe/Berlin',
    });
    await expect(t.gateway.schedules.add(owner, { ...base, name: "no spaces" })).rejects.toMatchObject({
      code: "unsupported",
    });
    await expect(t.gateway.schedules.add(owner, { ...base, prompt: " " })).rejects.toMatchObject({
      code: "unsupported",
    });
    await expect(t.gateway.schedules.add(owner, { ...base, chat_id: "nope" })).rejects.toMatchObject({
      code: "not_found",
    });
    const plain = await t.gateway.channels.create(owner, { name: "Chat", kind: "channel" });
    await expect(t.gateway.schedules.add(owner, { ...base, chat_id: plain.chat_id })).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringContaining("not an automation channel"),
    });
    expect(await t.gateway.schedules.list(owner)).toEqual([]);
    const ok = await t.gateway.schedules.add(owner, { ...base, tz: "Europe/Berlin" });
    // 09:00 in Berlin is 08:00 or 07:00 UTC.
    expect([7, 8]).toContain(new Date(ok.next_run!).getUTCHours());
    await expect(t.gateway.schedules.remove(owner, "nope")).rejects.toMatchObject({ code: "not_found" });
    await t.gateway.schedules.remove(owner, "x");
    expect(await t.gateway.schedules.list(owner)).toEqual([]);
  });

  it("a failing run stores an answer with status error saying why, and the run records the error", async () => {
    const failing: AgentRuntime = {
      // biome-ignore lint/correctness/useYield: a runtime that fails before its first event
      async *turn() {
        throw new Error("model quota exhausted");
      },
    };
    const t = await setup(failing);
    await t.gateway.schedules.add(owner, {
      name: "nightly",
      cron: "0 3 * * *",
      chat_id: t.channel.chat_id,
      prompt: "summarise",
    });
    await t.gateway.schedules.run(owner, "nightly");
    await waitFor(async () => (await t.gateway.schedules.list(owner))[0]!.last_run?.status === "error", 10_000);
    const [answer] = (await t.lane()).filter((m) => m.role === "assistant");
    expect(answer).toMatchObject({ status: "error" });
    expect(answer!.text).toContain("model quota exhausted");
    const [listed] = await t.gateway.schedules.list(owner);
    expect(listed!.last_run).toMatchObject({
      status: "error",
      answer_id: answer!.message_id,
      error: expect.stringContaining("model quota exhausted"),
    });
    const cron = (await t.notifications()).filter((n) => n.kind === "cron");
    expect(cron).toEqual([
      expect.objectContaining({ title: "nightly", body: expect.stringMatching(/^failed: .*model quota exhausted/) }),
    ]);
  });

  it("a run that still goes makes `run` refuse and the next slot skip; it ends once", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: AgentRuntime = {
      async *turn() {
        await gate;
        yield { type: "text", delta: "done at last" };
      },
    };
    const t = await setup(slow);
    await t.gateway.schedules.add(owner, {
      name: "busy",
      cron: "* * * * * *",
      chat_id: t.channel.chat_id,
      prompt: "go",
    });
    await waitFor(async () => (await t.gateway.schedules.list(owner))[0]!.last_run?.status === "running", 10_000);
    const first = (await t.gateway.schedules.list(owner))[0]!.last_run!;
    await expect(t.gateway.schedules.run(owner, "busy")).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringContaining("still goes"),
    });
    // Slots come every second meanwhile: each is claimed and skipped, none queues a prompt.
    await waitFor(async () => (await t.gateway.schedules.list(owner))[0]!.last_slot >= first.slot + 2000, 10_000);
    expect((await t.lane()).filter((m) => m.role === "user")).toHaveLength(1);
    await t.gateway.schedules.remove(owner, "busy");
    release();
    await waitFor(async () => (await t.lane()).some((m) => m.role === "assistant" && m.status === "complete"), 10_000);
    expect((await t.lane()).map((m) => [m.role, m.text])).toEqual([
      ["user", "go"],
      ["assistant", "done at last"],
    ]);
  });

  it("a schedule whose channel was deleted makes no run and stays listed", async () => {
    const t = await setup();
    await t.gateway.schedules.add(owner, {
      name: "orphan",
      cron: "* * * * * *",
      chat_id: t.channel.chat_id,
      prompt: "p",
    });
    await t.gateway.channels.delete(owner, t.channel.chat_id);
    await new Promise((r) => setTimeout(r, 2_500));
    const [listed] = await t.gateway.schedules.list(owner);
    expect(listed).toMatchObject({ name: "orphan", last_slot: 0 });
    expect(listed!.last_run).toBeUndefined();
    await expect(t.gateway.schedules.run(owner, "orphan")).resolves.toMatchObject({ status: "running" });
    await waitFor(async () => (await t.gateway.schedules.list(owner))[0]!.last_run?.status === "error", 5_000);
    expect((await t.gateway.schedules.list(owner))[0]!.last_run!.error).toContain("unknown chat_id");
  });
});
