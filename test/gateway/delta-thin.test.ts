// A delta device's thin updates (docs/PROTOCOL.md §12): an append shorter than the frame around
// it waits for more text, joined into the next update, and is held three intervals at most. Real
// ws devices; the runtime is stepped by what the device has received, so the asserts are about
// which characters arrive in which update, not about how long anything took.
import { afterEach, describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const updates = (device: Client): Frame[] => device.of("message.update");

/** An opening longer than an update's envelope: before it, updates go at the interval's pace. */
const OPENING = "o".repeat(300);

describe("delta updates", () => {
  it("delta - an update thinner than its envelope waits and goes out joined with the text that follows", async () => {
    const firstSeen = gate();
    const done = gate();
    const long = "x".repeat(200);
    h = await startGateway({
      updateIntervalMs: 0,
      // Three intervals of hold (3 s) between two steps a few milliseconds apart: room for a busy machine.
      deltaUpdateIntervalMs: 1000,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: OPENING } as RuntimeEvent;
        await firstSeen.wait;
        yield { type: "text", delta: "bcdef" } as RuntimeEvent;
        await sleep(5);
        yield { type: "text", delta: long } as RuntimeEvent;
        await done.wait;
      }),
    });
    const device = await Client.connect(h.url, { caps: { delta: true } });
    await device.request("message.send", { chat_id: "default", text: "go" });
    const first = await device.waitFor((f) => f.type === "message.update");
    // The first update of a message goes out at once, however short.
    expect(first.payload).toMatchObject({ offset: 0, append: OPENING });
    // Past the interval, so only the thin rule can hold the next one.
    await sleep(1100);
    firstSeen.release();
    const second = await device.waitFor((f) => f.type === "message.update" && f.payload.offset === OPENING.length);
    expect(second.payload.append).toBe(`bcdef${long}`);
    done.release();
    await device.waitFor((f) => f.type === "message.stop");
    expect(updates(device).map((f) => f.payload.offset)).toEqual([0, OPENING.length]);
  });

  it("delta - a thin update that nothing follows still goes out, three intervals after the one before", async () => {
    const firstSeen = gate();
    const done = gate();
    h = await startGateway({
      updateIntervalMs: 0,
      deltaUpdateIntervalMs: 100,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: OPENING } as RuntimeEvent;
        await firstSeen.wait;
        yield { type: "text", delta: "bc" } as RuntimeEvent;
        await done.wait;
      }),
    });
    const device = await Client.connect(h.url, { caps: { delta: true } });
    await device.request("message.send", { chat_id: "default", text: "go" });
    await device.waitFor((f) => f.type === "message.update");
    firstSeen.release();
    // The turn waits for this update before it ends, so only the hold running out can bring it.
    const second = await device.waitFor((f) => f.type === "message.update" && f.payload.offset === OPENING.length);
    expect(second.payload.append).toBe("bc");
    done.release();
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
