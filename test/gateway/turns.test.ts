import { afterEach, describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const turnFrames = (c: Client, from = 0) =>
  c.frames
    .slice(from)
    .filter((f) => f.type !== "hello.ok")
    .map((f) => f.type);

describe("turns", () => {
  it("turns - the echo answers the sender with its id and is broadcast to the other devices without", async () => {
    h = await startGateway();
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
    h = await startGateway({ runtime });
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
    h = await startGateway({ runtime, checkpointIntervalMs: 1 });
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
    h = await startGateway({
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
    h = await startGateway();
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
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    await c.say({ chat_id: "default", text: "x" });
    expect(c.of("commentary")[0].payload).toMatchObject({ text: "Looking that up", chat_id: "default" });
    expect(c.of("commentary")[0].seq).toBeUndefined();
  });

  it("turns - a device with caps.streaming false gets one message instead of start/update/stop", async () => {
    h = await startGateway({
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
    h = await startGateway({ streaming: false });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "whole" });
    expect(final.type).toBe("message");
    expect(final.payload).toMatchObject({ role: "assistant", text: "You said: whole" });
    expect(final.payload.runtime.model).toBe("demo");
    expect(c.of("message.start")).toEqual([]);
  });

  it("turns - a retried send with the same client_msg_id returns the same echo to the sender only and starts no second turn", async () => {
    const storage = memoryStorage();
    h = await startGateway({ storage });
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const { echo } = await a.say({ chat_id: "default", text: "once", client_msg_id: "k-1" });
    const again = await a.request("message.send", { chat_id: "default", text: "once", client_msg_id: "k-1" });
    expect(again.payload.message_id).toBe(echo.payload.message_id);
    expect(again.payload.client_msg_id).toBe("k-1");
    await sleep(100);
    expect(a.of("message.stop")).toHaveLength(1);
    expect(b.frames.filter((f) => f.type === "message" && f.payload.role === "user")).toHaveLength(1);
    // After a restart the key is still known: it is stored with the message.
    await h.close();
    h = await startGateway({ storage });
    const c = await Client.connect(h.url);
    const third = await c.request("message.send", { chat_id: "default", text: "once", client_msg_id: "k-1" });
    expect(third.payload.message_id).toBe(echo.payload.message_id);
    await sleep(100);
    expect(c.of("typing")).toEqual([]);
  });

  it("turns - concurrent duplicates of one client_msg_id store one message", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const [x, y] = await Promise.all([
      a.request("message.send", { chat_id: "default", text: "race", client_msg_id: "dup" }),
      b.request("message.send", { chat_id: "default", text: "race", client_msg_id: "dup" }),
    ]);
    expect(x.payload.message_id).toBe(y.payload.message_id);
    await a.waitFor((f) => f.type === "typing" && f.payload.on === false);
    const hist = await a.request("history", { chat_id: "default" });
    expect(hist.payload.messages.filter((m: any) => m.role === "user")).toHaveLength(1);
  });

  it("turns - a runtime that throws ends the turn with a message saying so, the runtime object, and typing off", async () => {
    h = await startGateway({
      runtime: scriptedRuntime(async function* (input) {
        yield { type: "text", delta: "partial" } as RuntimeEvent;
        if (input.message.text === "boom") throw new Error("model server exploded");
      }),
    });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "boom" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toContain("partial");
    expect(final.payload.final_text).toContain("model server exploded");
    expect(final.payload.runtime).toEqual({ latency: expect.any(Number) });
    expect(c.of("typing").at(-1)!.payload.on).toBe(false);
    // the gateway goes on
    expect((await c.say({ chat_id: "default", text: "again" })).final.payload.status).toBe("complete");
  });

  it("turns - a runtime that hangs past the timeout ends its turn as failed", async () => {
    h = await startGateway({
      turnTimeoutMs: 200,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "a" } as RuntimeEvent;
        await new Promise(() => undefined);
      }),
    });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "hang" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(/did not answer in time/);
    expect(c.of("typing").at(-1)!.payload.on).toBe(false);
  });

  it("turns - turns in one lane run one at a time, in order; other lanes run alongside", async () => {
    const g = gate();
    const runtime = scriptedRuntime(async function* (input) {
      if (input.message.text === "first") await g.wait;
      yield { type: "text", delta: `re:${input.message.text}` } as RuntimeEvent;
    });
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    const other = (await c.request("channel.create", { name: "Other", kind: "channel" })).payload.chat_id;
    await c.request("message.send", { chat_id: "default", text: "first" });
    await c.request("message.send", { chat_id: "default", text: "second" });
    await c.request("message.send", { chat_id: other, text: "elsewhere" });
    await c.waitFor((f) => f.type === "message.stop" && f.payload.chat_id === other);
    expect(c.of("message.stop").map((f) => f.payload.final_text)).toEqual(["re:elsewhere"]);
    g.release();
    await c.waitFor((f) => f.type === "message.stop" && f.payload.final_text === "re:second");
    expect(c.of("message.stop").map((f) => f.payload.final_text)).toEqual(["re:elsewhere", "re:first", "re:second"]);
    // The second turn saw the first exchange as history.
    expect(runtime.inputs[2].history.map((m) => m.text)).toEqual(["first", "re:first"]);
  });

  it("turns - /stop aborts the running turn through the signal; it ends stopped with what it had", async () => {
    let sawAbort = false;
    const runtime = scriptedRuntime(async function* (input) {
      input.signal.addEventListener("abort", () => (sawAbort = true));
      yield { type: "text", delta: "so far" } as RuntimeEvent;
      await new Promise((r) => setTimeout(r, 10_000));
    });
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    await c.request("message.send", { chat_id: "default", text: "long" });
    await c.waitFor((f) => f.type === "message.start");
    await sleep(80);
    await c.request("message.send", { chat_id: "default", text: "/stop" });
    const stop = await c.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({ status: "stopped", final_text: "so far" });
    expect(sawAbort).toBe(true);
    await c.waitFor((f) => f.type === "typing" && f.payload.on === false);
    expect(runtime.inputs).toHaveLength(1);
  });

  it("turns - a device that disconnects does not cancel its turn", async () => {
    const g = gate();
    h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        await g.wait;
        yield { type: "text", delta: "finished anyway" } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    await a.request("message.send", { chat_id: "default", text: "go" });
    await a.close();
    g.release();
    await sleep(100);
    const b = await Client.connect(h.url);
    const hist = await b.request("history", { chat_id: "default" });
    expect(hist.payload.messages.at(-1)).toMatchObject({
      role: "assistant",
      text: "finished anyway",
      status: "complete",
    });
  });

  it("turns - message.update is coalesced to at most one per 50 ms and the final text is complete", async () => {
    const text = "x".repeat(2000);
    h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < text.length; i += 10) {
          yield { type: "text", delta: text.slice(i, i + 10) } as RuntimeEvent;
          if (i % 200 === 0) await sleep(5);
        }
      }),
    });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "flood" });
    const updates = c.of("message.update");
    expect(updates.length).toBeLessThan(20);
    expect(final.payload.final_text).toBe(text);
  });

  it("turns - empty text without media is refused and nothing is stored", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    expect((await c.request("message.send", { chat_id: "default", text: "" })).payload.code).toBe("unsupported");
    expect((await c.request("message.send", { chat_id: "default" })).payload.code).toBe("unsupported");
    expect((await c.request("message.send", { chat_id: "nope", text: "x" })).payload.code).toBe("not_found");
    expect((await c.request("message.send", { chat_id: "default", thread_id: "nope", text: "x" })).payload.code).toBe(
      "not_found",
    );
    expect(
      (await c.request("message.send", { chat_id: "default", text: "x", media_refs: ["ghost"] })).payload.code,
    ).toBe("not_found");
    expect((await c.request("history", { chat_id: "default" })).payload.messages).toEqual([]);
    expect((await c.request("sync", { cursor: 0 })).payload.cursor).toBe(0);
  });

  it("turns - whitespace-only text is a message like any other: echoed, stored and answered", async () => {
    const runtime = scriptedRuntime(async function* (input) {
      yield { type: "text", delta: `got [${input.message.text}]` } as RuntimeEvent;
    });
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    const { echo, final } = await c.say({ chat_id: "default", text: "   " });
    expect(echo.payload).toMatchObject({ role: "user", text: "   ", thread_id: null });
    expect(final.payload.final_text).toBe("got [   ]");
    const history = (await c.request("history", { chat_id: "default" })).payload.messages;
    expect(history.map((m: any) => m.text)).toEqual(["   ", "got [   ]"]);
  });

  it("turns - too many turns in flight for one owner is rate_limited and not stored", async () => {
    const g = gate();
    h = await startGateway({
      maxTurnsPerOwner: 2,
      runtime: scriptedRuntime(async function* () {
        await g.wait;
        yield { type: "text", delta: "ok" } as RuntimeEvent;
      }),
    });
    const c = await Client.connect(h.url);
    await c.request("message.send", { chat_id: "default", text: "1" });
    await c.request("message.send", { chat_id: "default", text: "2" });
    const third = await c.request("message.send", { chat_id: "default", text: "3" });
    expect(third.payload.code).toBe("rate_limited");
    g.release();
    await c.waitFor(
      (f) => f.type === "message.stop" && f.payload.final_text === "ok" && c.of("message.stop").length === 2,
    );
    const users = (await c.request("history", { chat_id: "default" })).payload.messages.filter(
      (m: any) => m.role === "user",
    );
    expect(users.map((m: any) => m.text)).toEqual(["1", "2"]);
  });

  it("threads - a thread's id as chat_id means that thread, and frames carry both ids", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const th = (await c.request("channel.create", { name: "T", kind: "thread", parent_chat_id: "default" })).payload
      .chat_id;
    const a = await c.say({ chat_id: th, text: "via thread id" });
    expect(a.echo.payload).toMatchObject({ chat_id: "default", thread_id: th });
    expect(a.final.payload).toMatchObject({ chat_id: "default", thread_id: th });
    const b = await c.say({ chat_id: "default", thread_id: th, text: "via pair" });
    expect(b.echo.payload.thread_id).toBe(th);
    const flat = await c.request("history", { chat_id: "default" });
    expect(flat.payload.messages).toEqual([]);
    const inThread = await c.request("history", { chat_id: "default", thread_id: th });
    expect(inThread.payload.messages).toHaveLength(4);
    expect(inThread.payload).toMatchObject({ chat_id: "default", thread_id: th });
  });
});
