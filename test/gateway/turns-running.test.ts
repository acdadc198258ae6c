import { describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { manualClock } from "chat-gateway/testing";
import { Client, gatewayPerTest } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

const startGateway = gatewayPerTest();

describe("turns", () => {
  it("turns - a runtime that throws ends the turn with a message saying so, the runtime object, and typing off", async () => {
    const h = await startGateway({
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

  it("turns - a runtime that hangs past the timeout ends its turn as failed, when the timeout falls due", async () => {
    const clock = manualClock();
    const hangs = gate();
    const h = await startGateway({
      clock,
      turnTimeoutMs: 200,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "a" } as RuntimeEvent;
        hangs.release();
        await new Promise(() => undefined);
      }),
    });
    let ended = 0;
    h.gateway.on("turn:end", () => void ended++);
    const c = await Client.connect(h.url);
    const said = c.say({ chat_id: "default", text: "hang" });
    await hangs.wait;
    clock.advance(199);
    await sleep(0);
    expect(ended).toBe(0);
    clock.advance(1);
    const { final } = await said;
    expect(ended).toBe(1);
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
    const h = await startGateway({ runtime });
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
    const h = await startGateway({ runtime });
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
    const h = await startGateway({
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
});
