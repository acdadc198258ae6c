// A runtime is not trusted to end: the answer size and the turn's time are bounded by the
// gateway, and a runtime that floods events never takes the event loop from other connections.
// The turn's time runs on a manual clock here: the test moves it and asserts order and counts.
import { afterEach, describe, expect, it } from "vitest";
import type { RuntimeEvent, TurnInput } from "chat-gateway";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { manualClock } from "chat-gateway/testing";
import { gate, scriptedRuntime } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** What the runtime saw of its own end: the abort and whether its iterator was returned. */
function ending() {
  const seen = { aborted: false, returned: false, reason: undefined as unknown, pulledAfterAbort: 0 };
  const watch = (input: TurnInput) =>
    input.signal.addEventListener("abort", () => Object.assign(seen, { aborted: true, reason: input.signal.reason }));
  return { seen, watch };
}

/** The stored copy of a message, as history returns it. */
async function stored(c: Client, messageId: string): Promise<Record<string, any>> {
  const page = await c.request("history", { chat_id: "default" });
  const found = page.payload.messages.find((m: { message_id: string }) => m.message_id === messageId);
  if (!found) throw new Error(`message ${messageId} not in history`);
  return found;
}

const updates = (c: Client, messageId: string): Frame[] =>
  c.of("message.update").filter((f) => f.payload.message_id === messageId);

describe("turn limits", () => {
  it("turn limits - an answer past maxAnswerChars keeps what fits, ends with status error and says why, devices and storage agree", async () => {
    const { seen, watch } = ending();
    const runtime = scriptedRuntime(async function* (input): AsyncIterable<RuntimeEvent> {
      watch(input);
      try {
        yield { type: "reasoning", delta: "r".repeat(300) };
        // Never ends on its own, and never awaits anything real.
        for (let i = 0; ; i++) {
          if (input.signal.aborted) seen.pulledAfterAbort++;
          yield { type: "text", delta: String(i % 10).repeat(1000) };
        }
      } finally {
        seen.returned = true;
      }
    });
    h = await startGateway({ runtime, maxAnswerChars: 5_000 });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "talk forever" });

    expect(final.type).toBe("message.stop");
    expect(final.payload.status).toBe("error");
    const [answer, note] = final.payload.final_text.split("\n\n");
    expect(answer.length + final.payload.reasoning.length).toBe(5_000);
    expect(answer).toBe(
      Array.from({ length: 5 }, (_, i) => String(i).repeat(1000))
        .join("")
        .slice(0, 4_700),
    );
    expect(note).toBe("The answer was cut off at the gateway's limit of 5,000 characters.");
    for (const u of updates(c, final.payload.message_id))
      expect(u.payload.text.length + (u.payload.reasoning ?? "").length).toBeLessThanOrEqual(5_000);
    expect(c.of("typing").at(-1)!.payload.on).toBe(false);
    await expect.poll(() => seen.returned).toBe(true);
    expect(seen).toMatchObject({ aborted: true, reason: "limit", pulledAfterAbort: 0 });

    const copy = await stored(c, final.payload.message_id);
    expect({ text: copy.text, reasoning: copy.reasoning, status: copy.status }).toEqual({
      text: final.payload.final_text,
      reasoning: final.payload.reasoning,
      status: "error",
    });
    // The lane is free again.
    const next = await c.say({ chat_id: "default", text: "again" });
    expect(next.final.payload.status).toBe("error");
  });

  it("turn limits - the cut never splits a surrogate pair", async () => {
    const runtime = scriptedRuntime(async function* (): AsyncIterable<RuntimeEvent> {
      for (;;) yield { type: "text", delta: "😀".repeat(100) };
    });
    h = await startGateway({ runtime, maxAnswerChars: 1_001 });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "emoji" });
    const answer = final.payload.final_text.split("\n\n")[0];
    expect(answer).toBe("😀".repeat(500));
    expect(final.payload.status).toBe("error");
  });

  it("turn limits - a runtime that keeps yielding past maxTurnMs is stopped by the turn's clock, though it is never silent", async () => {
    const { seen, watch } = ending();
    const clock = manualClock();
    let step = gate();
    let took = gate();
    const runtime = scriptedRuntime(async function* (input): AsyncIterable<RuntimeEvent> {
      watch(input);
      try {
        for (;;) {
          yield { type: "text", delta: "." };
          took.release();
          await step.wait;
        }
      } finally {
        seen.returned = true;
      }
    });
    h = await startGateway({ runtime, clock, maxTurnMs: 600, turnTimeoutMs: 200 });
    const c = await Client.connect(h.url);
    const said = c.say({ chat_id: "default", text: "drip" });
    // A dot every 20 ms of the clock: never silent for the 200 ms idle timeout, past 600 ms in all.
    for (let ms = 0; ms < 600; ms += 20) {
      await took.wait;
      took = gate();
      expect(seen.aborted).toBe(false);
      clock.advance(20);
      const next = step;
      step = gate();
      next.release();
    }
    const { final } = await said;

    expect(final.payload.status).toBe("error");
    // One dot at the start and one after each 20 ms step before the limit: 30.
    expect(final.payload.final_text).toBe(
      `${".".repeat(30)}\n\nThe agent was stopped: the turn ran past the gateway's limit of 600 ms.`,
    );
    expect(c.of("typing").at(-1)!.payload.on).toBe(false);
    await expect.poll(() => seen.returned).toBe(true);
    expect(seen).toMatchObject({ aborted: true, reason: "limit" });
    const copy = await stored(c, final.payload.message_id);
    expect(copy.text).toBe(final.payload.final_text);
  });

  it("turn limits - a runtime flooding events without awaiting leaves other connections answered, and the turn's clock still fires", async () => {
    const { seen, watch } = ending();
    const clock = manualClock();
    const runtime = scriptedRuntime(async function* (input): AsyncIterable<RuntimeEvent> {
      watch(input);
      // Bounded so that a gateway that never yields fails this test instead of hanging it.
      const until = Date.now() + 6_000;
      while (Date.now() < until) yield { type: "usage", promptTokens: 1 };
    });
    h = await startGateway({ runtime, clock, maxTurnMs: 1_500 });
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    await a.request("message.send", { chat_id: "default", text: "flood" });

    // The clock stands still: the turn cannot end, so each pong comes while the flood goes on.
    for (let i = 0; i < 5; i++) {
      const pong = await b.request("ping", { ts: i });
      expect(pong).toMatchObject({ type: "pong", payload: { ts: i } });
      expect(seen.aborted).toBe(false);
    }
    // This line runs only because the flood yields the event loop: the limit fires when due.
    clock.advance(1_499);
    expect(seen.aborted).toBe(false);
    clock.advance(1);
    expect(seen).toMatchObject({ aborted: true, reason: "limit" });

    const stop = await a.waitFor((f) => f.type === "message.stop", 4_000);
    expect(stop.payload.status).toBe("error");
    expect(stop.payload.final_text).toContain("ran past the gateway's limit of 1.5 s");
  });

  it("turn limits - limits must be positive numbers", async () => {
    await expect(startGateway({ maxAnswerChars: 0 })).rejects.toThrow(TypeError);
    await expect(startGateway({ maxAnswerChars: 10.5 })).rejects.toThrow(/maxAnswerChars must be a whole number/);
    await expect(startGateway({ maxTurnMs: -1 })).rejects.toThrow(/maxTurnMs must be a positive number/);
  });
});
