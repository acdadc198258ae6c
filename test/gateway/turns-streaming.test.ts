import { describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { manualClock } from "chat-gateway/testing";
import { Client, gatewayPerTest } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

const startGateway = gatewayPerTest();

const turnFrames = (c: Client, from = 0) =>
  c.frames
    .slice(from)
    .filter((f) => f.type !== "hello.ok")
    .map((f) => f.type);

describe("turns", () => {
  it("turns - the echo answers the sender with its id and is broadcast to the other devices without", async () => {
    const h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const { echo } = await a.say({ chat_id: "default", text: "hi" });
    expect(echo.id).toBeDefined();
    const copy = await b.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(copy.id).toBeUndefined();
    expect(copy.seq).toBe(echo.seq);
    expect(copy.payload.message_id).toBe(echo.payload.message_id);
    expect(a.frames.filter((f) => f.type === "message" && f.payload.role === "user")).toHaveLength(1);
  });

  it("turns - a streamed turn: typing on, start, updates, stop with runtime, typing off", async () => {
    const runtime = scriptedRuntime(async function* (): AsyncIterable<RuntimeEvent> {
      yield { type: "reasoning", delta: "thinking" };
      for (const piece of ["Hel", "lo ", "world"]) {
        yield { type: "text", delta: piece };
        await sleep(70);
      }
      yield {
        type: "usage",
        model: "openrouter/openai/gpt-5",
        promptTokens: 500,
        completionTokens: 20,
        totalTokens: 520,
        contextWindow: 1000,
        cost: 0.01,
        cwd: `${process.env.HOME}/proj`,
      };
    });
    const h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    const from = c.frames.length;
    const { final } = await c.say({ chat_id: "default", text: "go" });
    const types = turnFrames(c, from);
    expect(types[0]).toBe("message");
    expect(types[1]).toBe("typing");
    expect(types[2]).toBe("message.start");
    expect(types.at(-2)).toBe("message.stop");
    expect(types.at(-1)).toBe("typing");
    expect(types.filter((t) => t === "message.update").length).toBeGreaterThanOrEqual(2);
    const updates = c.of("message.update");
    expect(updates.at(-1)!.payload.text).toBe("Hello world".slice(0, updates.at(-1)!.payload.text.length));
    expect(updates[0].payload.reasoning).toBe("thinking");
    expect(final.payload).toMatchObject({
      final_text: "Hello world",
      reasoning: "thinking",
      model: "gpt-5",
      tokens: 520,
      status: "complete",
      chat_id: "default",
      thread_id: null,
      runtime: { model: "gpt-5", context_pct: 50, cost: 0.01, cwd: "~/proj" },
    });
    expect(final.payload.runtime.latency).toBeGreaterThan(0.1);
    expect(final.seq).toBeGreaterThan(0);
    expect(c.of("typing").map((f) => f.payload.on)).toEqual([true, false]);
  });

  it("turns - streaming frames and history carry model and tokens as soon as the runtime reports them; message.start the runtime's declared model", async () => {
    const reported = gate();
    const finish = gate();
    const runtime = scriptedRuntime(
      async function* (): AsyncIterable<RuntimeEvent> {
        yield { type: "text", delta: "first " };
        yield { type: "usage", model: "vendor/other-2", promptTokens: 30, completionTokens: 12 };
        // Past the checkpoint interval, so the next event checkpoints the streaming message.
        await sleep(5);
        yield { type: "text", delta: "second" };
        reported.release();
        await finish.wait;
      },
      { model: "acme/big-1" },
    );
    const h = await startGateway({ runtime, checkpointIntervalMs: 1 });
    const c = await Client.connect(h.url);
    await c.request("message.send", { chat_id: "default", text: "go" });
    const start = await c.waitFor((f) => f.type === "message.start");
    expect(start.payload).toMatchObject({ role: "assistant", model: "big-1" });
    expect(start.payload).not.toHaveProperty("tokens");
    await reported.wait;
    const update = await c.waitFor((f) => f.type === "message.update" && f.payload.text === "first second");
    expect(update.payload).toMatchObject({ model: "other-2", tokens: 42 });
    // Mid-stream, history already holds them (the checkpoint of the streaming message).
    await sleep(50);
    const streaming = (await c.request("history", { chat_id: "default" })).payload.messages.find(
      (m: any) => m.role === "assistant",
    );
    expect(streaming).toMatchObject({ status: "streaming", model: "other-2", tokens: 42 });
    finish.release();
    const stop = await c.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({
      final_text: "first second",
      model: "other-2",
      tokens: 42,
      runtime: { model: "other-2" },
    });
    const stored = (await c.request("history", { chat_id: "default" })).payload.messages.find(
      (m: any) => m.role === "assistant",
    );
    expect(stored).toMatchObject({ status: "complete", model: "other-2", tokens: 42 });
  });

  it("turns - without a declared or reported model, message.start and the final frame carry none", async () => {
    const h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "plain" } as RuntimeEvent;
      }),
    });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "go" });
    expect(c.of("message.start")[0].payload).not.toHaveProperty("model");
    expect(final.payload).not.toHaveProperty("model");
    expect(final.payload).not.toHaveProperty("tokens");
  });

  it("turns - tool progress carries full args, then output, duration and ok", async () => {
    const h = await startGateway();
    const c = await Client.connect(h.url);
    await c.say({ chat_id: "default", text: "tool: ping pong" });
    const start = c.of("tool.start")[0];
    const end = c.of("tool.end")[0];
    expect(start.payload).toMatchObject({
      index: 0,
      name: "echo",
      args: { text: "ping pong" },
      chat_id: "default",
      thread_id: null,
    });
    expect(typeof start.payload.preview).toBe("string");
    expect(end.payload).toMatchObject({ index: 0, name: "echo", output: "ping pong", ok: true });
    expect(typeof end.payload.duration).toBe("number");
    expect(start.payload.message_id).toBe(end.payload.message_id);
    expect(c.of("message.stop")[0].payload.final_text).toBe("You said: ping pong");
  });

  it("turns - commentary beats reach the device live", async () => {
    const runtime = scriptedRuntime(async function* () {
      yield { type: "commentary", text: "Looking that up" } as RuntimeEvent;
      yield { type: "text", delta: "done" } as RuntimeEvent;
    });
    const h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    await c.say({ chat_id: "default", text: "x" });
    expect(c.of("commentary")[0].payload).toMatchObject({ text: "Looking that up", chat_id: "default" });
    expect(c.of("commentary")[0].seq).toBeUndefined();
  });

  it("turns - a device with caps.streaming false gets one message instead of start/update/stop", async () => {
    const h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < 5; i++) {
          yield { type: "text", delta: `${i}` } as RuntimeEvent;
          await sleep(60);
        }
      }),
    });
    const plain = await Client.connect(h.url, { caps: { streaming: false } });
    const live = await Client.connect(h.url);
    const { final } = await live.say({ chat_id: "default", text: "count" });
    const got = await plain.waitFor((f) => f.type === "message" && f.payload.role === "assistant");
    expect(plain.of("message.start")).toEqual([]);
    expect(plain.of("message.update")).toEqual([]);
    expect(plain.of("message.stop")).toEqual([]);
    expect(got.seq).toBe(final.seq);
    expect(got.payload).toMatchObject({
      message_id: final.payload.message_id,
      text: "01234",
      role: "assistant",
      runtime: final.payload.runtime,
    });
  });

  it("turns - the gateway streaming setting off sends and stores one message", async () => {
    const h = await startGateway({ streaming: false });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "whole" });
    expect(final.type).toBe("message");
    expect(final.payload).toMatchObject({ role: "assistant", text: "You said: whole" });
    expect(final.payload.runtime.model).toBe("demo");
    expect(c.of("message.start")).toEqual([]);
  });

  it("turns - message.update is coalesced to at most one per 50 ms and the final text is complete", async () => {
    const text = "x".repeat(2000);
    const clock = manualClock();
    let step = gate();
    let took = gate();
    const h = await startGateway({
      clock,
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < text.length; i += 10) {
          yield { type: "text", delta: text.slice(i, i + 10) } as RuntimeEvent;
          // 200 characters at once, then 25 ms of the clock.
          if (i % 200 === 190) {
            took.release();
            await step.wait;
          }
        }
      }),
    });
    const c = await Client.connect(h.url);
    const said = c.say({ chat_id: "default", text: "flood" });
    for (let round = 0; round < 10; round++) {
      await took.wait;
      took = gate();
      clock.advance(25);
      const next = step;
      step = gate();
      next.release();
    }
    const { final } = await said;
    // 250 ms of the clock, an update every 50 ms of it: the first at once, then each carrying all
    // the text that came since (two rounds of 200 characters), however fast the runtime yields.
    const updates = c.of("message.update");
    expect(updates.map((u) => u.payload.text.length)).toEqual([200, 400, 800, 1200, 1600, 2000]);
    expect(final.payload.final_text).toBe(text);
  });
});
