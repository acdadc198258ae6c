// A delta device's thin updates (docs/PROTOCOL.md §12): an append shorter than the frame around
// it waits for more text, joined into the next update, and is held three intervals at most. Real
// ws devices; the runtime is stepped by the test and the gateway's time is a manual clock, so the
// asserts are about which characters arrive in which update, not about how long anything took.
import { afterEach, describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { manualClock, type ManualClock } from "chat-gateway/testing";
import { gate, scriptedRuntime } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const updates = (device: Client): Frame[] => device.of("message.update");

/**
 * A runtime that yields each text when the test steps it; a step returns once the turn has taken
 * the text and, on the test's clock, published the update for it (the turn's timer, due at once).
 */
function stepped(clock: ManualClock, texts: string[]) {
  const go = texts.map(() => gate());
  const taken = texts.map(() => gate());
  const done = gate();
  const runtime = scriptedRuntime(async function* () {
    for (const [i, text] of texts.entries()) {
      await go[i]!.wait;
      yield { type: "text", delta: text } as RuntimeEvent;
      taken[i]!.release();
    }
    await done.wait;
  });
  const step = async (i: number) => {
    go[i]!.release();
    await taken[i]!.wait;
    clock.advance(0);
  };
  return { runtime, step, end: done.release };
}

/** An opening longer than an update's envelope: before it, updates go at the interval's pace. */
const OPENING = "o".repeat(300);

describe("delta updates", () => {
  it("delta - an update thinner than its envelope waits and goes out joined with the text that follows", async () => {
    const clock = manualClock();
    const long = "x".repeat(200);
    const run = stepped(clock, [OPENING, "bcdef", long]);
    h = await startGateway({ clock, updateIntervalMs: 0, deltaUpdateIntervalMs: 1000, runtime: run.runtime });
    const device = await Client.connect(h.url, { caps: { delta: true } });
    await device.request("message.send", { chat_id: "default", text: "go" });
    await run.step(0);
    const first = await device.waitFor((f) => f.type === "message.update");
    expect(first.payload).toMatchObject({ offset: 0, append: OPENING });
    // Past the interval, so only the thin rule can hold the next one.
    clock.advance(1_100);
    await run.step(1);
    await run.step(2);
    const second = await device.waitFor((f) => f.type === "message.update" && f.payload.offset === OPENING.length);
    expect(second.payload.append).toBe(`bcdef${long}`);
    run.end();
    await device.waitFor((f) => f.type === "message.stop");
    expect(updates(device).map((f) => f.payload.offset)).toEqual([0, OPENING.length]);
  });

  it("delta - a thin update that nothing follows still goes out, three intervals after the one before", async () => {
    const clock = manualClock();
    const run = stepped(clock, [OPENING, "bc"]);
    h = await startGateway({ clock, updateIntervalMs: 0, deltaUpdateIntervalMs: 100, runtime: run.runtime });
    const device = await Client.connect(h.url, { caps: { delta: true } });
    await device.request("message.send", { chat_id: "default", text: "go" });
    await run.step(0);
    await device.waitFor((f) => f.type === "message.update");
    await run.step(1);
    // Nothing follows the thin update: only the hold running out, three intervals on, brings it.
    clock.advance(300);
    const second = await device.waitFor((f) => f.type === "message.update" && f.payload.offset === OPENING.length);
    expect(second.payload.append).toBe("bc");
    run.end();
    const stop = await device.waitFor((f) => f.type === "message.stop");
    expect(stop.payload.final_text).toBe(`${OPENING}bc`);
  });

  it("delta - a full-text device is not held for thin updates", async () => {
    const steps = Array.from({ length: 3 }, () => gate());
    h = await startGateway({
      updateIntervalMs: 0,
      deltaUpdateIntervalMs: 1000,
      runtime: scriptedRuntime(async function* () {
        for (const [i, step] of steps.entries()) {
          yield { type: "text", delta: String(i) } as RuntimeEvent;
          await step.wait;
        }
      }),
    });
    const device = await Client.connect(h.url);
    await device.request("message.send", { chat_id: "default", text: "go" });
    // Each one-character update reaches the device before the turn goes on.
    for (const [i, step] of steps.entries()) {
      const text = "012".slice(0, i + 1);
      await device.waitFor((f) => f.type === "message.update" && f.payload.text === text);
      step.release();
    }
    await device.waitFor((f) => f.type === "message.stop");
  });
});
