// An answered card leaves its line on every device (docs/PROTOCOL.md §14.5): the answer keeps its
// asks as they ended (who answered, what), on message.stop, in history and after a restart; and a
// device joining mid-turn gets the answer's finished tools too (§14.3).
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRuntime } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await removeTempDirs();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** "asks": an approval, then a model choice, then a question left to expire. "tools": one tool done, one running. */
const runtime: AgentRuntime = {
  async *turn(input) {
    if (input.message.text === "asks") {
      const approval = await input.ask({
        kind: "approval",
        title: "Run rm?",
        tool: { name: "rm", args: { path: "/tmp/x" } },
      });
      const model = await input.ask({
        kind: "model",
        title: "Which model?",
        models: [
          { id: "gpt-4o", label: "GPT-4o" },
          { id: "small", label: "Small" },
        ],
      });
      const late = await input.ask({
        kind: "confirm",
        title: "Anything else?",
        options: [{ id: "no", label: "No" }],
        expiresInMs: 50,
      });
      yield { type: "text", delta: `${approval.option_id} ${model.option_id} ${late.outcome}` };
      return;
    }
    yield { type: "tool-start", id: "a", name: "search", args: { q: "cats" } };
    yield { type: "tool-end", id: "a", output: { hits: 3 }, ok: true, duration: 0.5 };
    yield { type: "tool-start", id: "b", name: "fetch", args: { url: "http://x" } };
    yield { type: "text", delta: "Working… " };
    while (!input.signal.aborted) await sleep(20);
  },
};

describe("answered asks on the answer", () => {
  it("asks - kept on message.stop and history, with the answering device's name, also after a restart; unanswered ones say how they ended", async () => {
    const dir = await tempDir();
    harness = await startGateway({ storage: sqlJsStorage({ dir }), runtime });
    const laptop = await Client.connect(harness.url, { caps: { pickers: true }, device_name: "Laptop" });
    const phone = await Client.connect(harness.url, {
      caps: { pickers: true },
      device_id: "pixel",
      device_name: "Pixel 8",
    });
    await laptop.request("message.send", { chat_id: "default", text: "asks" });
    const approval = await phone.waitFor((f) => f.type === "picker.approval", 10_000);
    const resolved = await phone.request("picker.select", {
      picker_id: approval.payload.picker_id,
      option_id: "approve",
    });
    expect(resolved.payload).toMatchObject({ outcome: "selected", device_id: "pixel", device_name: "Pixel 8" });
    const model = await laptop.waitFor((f) => f.type === "picker.model", 10_000);
    await laptop.request("message.send", { chat_id: "default", text: `/model gpt-4o` });
    const stop = await laptop.waitFor(
      (f) => f.type === "message.stop" && f.payload.final_text.startsWith("approve"),
      10_000,
    );
    expect(stop.payload.final_text).toBe("approve gpt-4o expired");
    const expected = [
      {
        picker_id: approval.payload.picker_id,
        kind: "approval",
        title: "Run rm?",
        outcome: "selected",
        option_id: "approve",
        label: "Approve",
        device_id: "pixel",
        device_name: "Pixel 8",
      },
      {
        picker_id: model.payload.picker_id,
        kind: "model",
        title: "Which model?",
        outcome: "selected",
        option_id: "gpt-4o",
        label: "GPT-4o",
        device_name: "Laptop",
      },
      { kind: "confirm", title: "Anything else?", outcome: "expired" },
    ];
    expect(stop.payload.asks).toMatchObject(expected);
    expect(stop.payload.asks[2].device_name).toBeUndefined();
    expect(stop.payload.asks.every((a: { ts: number }) => Number.isInteger(a.ts))).toBe(true);
    await harness.close();

    // A fresh device after a restart loads history, with no sync: the lines are there.
    harness = await startGateway({ storage: sqlJsStorage({ dir }), runtime });
    const fresh = await Client.connect(harness.url, { device_name: "New tab" });
    const page = await fresh.request("history", { chat_id: "default" });
    const answer = page.payload.messages.find((m: { message_id: string }) => m.message_id === stop.payload.message_id);
    expect(answer.asks).toEqual(stop.payload.asks);
    expect(
      page.payload.messages
        .filter((m: { role: string }) => m.role === "user")
        .every((m: { asks?: unknown }) => m.asks === undefined),
    ).toBe(true);
  });

  it("join - a device joining mid-turn gets the answer's finished tools (start then end) and its running one (start only), in call order", async () => {
    harness = await startGateway({ storage: sqlJsStorage({ dir: await tempDir() }), runtime });
    const a = await Client.connect(harness.url);
    await a.request("message.send", { chat_id: "default", text: "tools" });
    await a.waitFor((f) => f.type === "message.update" && String(f.payload.text).startsWith("Working"), 10_000);
    const b = await Client.connect(harness.url);
    await b.waitFor((f) => f.type === "typing" && f.payload.on === true);
    const tools = b.frames
      .filter((f) => f.type === "tool.start" || f.type === "tool.end")
      .map((f) => [f.type, f.payload.index, f.payload.name]);
    expect(tools).toEqual([
      ["tool.start", 0, "search"],
      ["tool.end", 0, "search"],
      ["tool.start", 1, "fetch"],
    ]);
    expect(b.frames.find((f) => f.type === "tool.end")!.payload).toMatchObject({
      output: { hits: 3 },
      ok: true,
      duration: 0.5,
    });
    expect(b.frames.find((f) => f.type === "tool.start" && f.payload.index === 0)!.payload.args).toEqual({ q: "cats" });
    await b.request("turn.stop", { chat_id: "default" });
    const stop = await a.waitFor((f) => f.type === "message.stop", 10_000);
    expect(stop.payload.tools.map((t: { name: string; ok: boolean }) => [t.name, t.ok])).toEqual([
      ["search", true],
      ["fetch", false],
    ]);
  });
});
