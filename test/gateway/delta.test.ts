// Delta updates (docs/PROTOCOL.md §12) through the wire: real ws devices with and without
// caps.delta on one owner, a slow consumer through the public Connection contract, a device that
// joins mid-stream, and a text rewritten mid-stream by another publisher on the bus.
import { afterEach, describe, expect, it } from "vitest";
import {
  ANONYMOUS_OWNER,
  createGateway,
  memoryBus,
  type Connection,
  type GatewayOptions,
  type RuntimeEvent,
} from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { manualClock } from "chat-gateway/testing";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";
import { until } from "../storage/sqljs-helpers.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A deterministic generator, so a failing chunking can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Text with emoji (surrogate pairs), accents and CJK, cut into chunks of 1 to 7 UTF-16 units anywhere, pairs included. */
function chunked(text: string, next: () => number): string[] {
  const chunks: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = 1 + Math.floor(next() * 7);
    chunks.push(text.slice(i, i + n));
    i += n;
  }
  return chunks;
}

const SAMPLE = "Héllo 👋 wörld, 你好 🎉🎉 — naïve café 👩‍💻 done. ".repeat(12);

/** What a delta device holds after applying its updates in order; throws on an offset that does not match. */
function assemble(
  frames: Frame[],
  messageId: string,
): { text: string; reasoning: string; appends: number; full: number } {
  const held = { text: "", reasoning: "", appends: 0, full: 0 };
  for (const f of frames) {
    if (f.payload.message_id !== messageId || f.type !== "message.update") continue;
    const p = f.payload;
    if (typeof p.text === "string") {
      held.text = p.text;
      held.full++;
    } else {
      if (p.offset !== held.text.length) throw new Error(`offset ${p.offset}, held ${held.text.length}`);
      held.text += p.append;
      held.appends++;
    }
    if (typeof p.reasoning === "string") held.reasoning = p.reasoning;
    else if (p.reasoning_offset !== undefined) {
      if (p.reasoning_offset !== held.reasoning.length)
        throw new Error(`reasoning_offset ${p.reasoning_offset}, held ${held.reasoning.length}`);
      held.reasoning += p.reasoning_append;
    }
  }
  return held;
}

function streamOf(chunks: Array<{ type: "text" | "reasoning"; delta: string }>, pauseMs = 2) {
  return scriptedRuntime(async function* () {
    for (const c of chunks) {
      yield c as RuntimeEvent;
      await sleep(pauseMs);
    }
    // Long enough for the last update to go out before the stop.
    await sleep(30);
  });
}

/** A Connection whose socket buffer the test sets, to play a slow consumer. */
function fakeConnection(buffered: { value: number }) {
  const sent: string[] = [];
  const conn: Connection = {
    send: (t) => void sent.push(t),
    sendBinary: () => undefined,
    close: () => undefined,
    get bufferedAmount() {
      return buffered.value;
    },
    context: {},
  };
  return { conn, frames: () => sent.map((t) => JSON.parse(t) as Frame) };
}

describe("delta updates", () => {
  it("delta - appends concatenate to exactly final_text and reasoning, across surrogate pairs; a device without caps.delta sees full texts", async () => {
    const next = random(7);
    const text = chunked(SAMPLE, next).map((delta) => ({ type: "text" as const, delta }));
    const reasoning = chunked("Thinking 🤔 about it… 🧠".repeat(5), next).map((delta) => ({
      type: "reasoning" as const,
      delta,
    }));
    h = await startGateway({
      updateIntervalMs: 1,
      deltaUpdateIntervalMs: 0,
      runtime: streamOf([...reasoning, ...text]),
    });
    const delta = await Client.connect(h.url, { caps: { delta: true } });
    const full = await Client.connect(h.url);
    const { final } = await full.say({ chat_id: "default", text: "go" });
    await delta.waitFor((f) => f.type === "message.stop");
    const id = final.payload.message_id as string;

    const deltaUpdates = delta.of("message.update");
    expect(deltaUpdates.length).toBeGreaterThan(10);
    expect(deltaUpdates.every((f) => f.payload.text === undefined && typeof f.payload.offset === "number")).toBe(true);
    const held = assemble(delta.frames, id);
    expect(held.full).toBe(0);
    expect(held.text).toBe(final.payload.final_text);
    expect(held.text).toBe(SAMPLE);
    expect(held.reasoning).toBe(final.payload.reasoning);
    expect(delta.of("message.stop")[0]!.payload).toEqual(final.payload);

    const fullUpdates = full.of("message.update");
    expect(fullUpdates.length).toBeGreaterThan(10);
    for (const f of fullUpdates) {
      expect(Object.keys(f.payload)).not.toContain("offset");
      expect(Object.keys(f.payload)).not.toContain("append");
      expect(SAMPLE.startsWith(f.payload.text)).toBe(true);
    }
    expect(fullUpdates.at(-1)!.payload.text).toBe(SAMPLE);
  });

  it("delta - a delta device gets at most one update per deltaUpdateIntervalMs, each joining every append since; full-text devices keep the turn's pace", async () => {
    // 10 characters every 5 ms of the gateway's clock for 600 ms: the turn publishes an update every 20 ms.
    const text = "0123456789".repeat(120);
    const clock = manualClock();
    let step = gate();
    let took = gate();
    h = await startGateway({
      clock,
      updateIntervalMs: 20,
      deltaUpdateIntervalMs: 100,
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < text.length; i += 10) {
          yield { type: "text", delta: text.slice(i, i + 10) } as RuntimeEvent;
          took.release();
          await step.wait;
        }
      }),
    });
    // In-process connections: each frame is seen as it is written, at the clock's time.
    const device = async (id: string, caps: Record<string, unknown>) => {
      const written: Array<{ frame: Frame; at: number }> = [];
      const conn: Connection = {
        send: (t) => void written.push({ frame: JSON.parse(t) as Frame, at: clock.now() }),
        sendBinary: () => undefined,
        close: () => undefined,
        bufferedAmount: 0,
        context: {},
      };
      const handle = h!.gateway.accept(conn);
      handle.receiveText(JSON.stringify({ type: "hello", payload: { token: "", device_id: id, caps } }));
      await until(() => written.some((w) => w.frame.type === "hello.ok"), "hello.ok");
      const updates = () => written.filter((w) => w.frame.type === "message.update");
      return { handle, written, updates };
    };
    const delta = await device("delta", { delta: true });
    const full = await device("full", {});
    delta.handle.receiveText(JSON.stringify({ type: "message.send", payload: { chat_id: "default", text: "go" } }));
    for (let i = 0; i < text.length / 10; i++) {
      await took.wait;
      took = gate();
      clock.advance(5);
      // What the timers started (a frame through the bus) is written before the runtime goes on.
      await sleep(0);
      const next = step;
      step = gate();
      next.release();
    }
    await until(() => delta.written.some((w) => w.frame.type === "message.stop"), "message.stop");
    const stop = delta.written.find((w) => w.frame.type === "message.stop")!.frame;
    const held = assemble(
      delta.written.map((w) => w.frame),
      stop.payload.message_id as string,
    );
    expect(stop.payload.final_text).toBe(text);
    expect(text.startsWith(held.text)).toBe(true);
    expect(held.appends).toBeGreaterThan(1);
    // 600 ms of the clock: the delta device's updates 100 ms apart, one at the start and 6 more;
    // the full-text device's at the turn's pace of 20 ms, 31.
    const gaps = (w: Array<{ at: number }>) => w.slice(1).map((u, i) => u.at - w[i]!.at);
    expect(gaps(delta.updates())).toEqual(Array(6).fill(100));
    expect(gaps(full.updates())).toEqual(Array(30).fill(20));
  });

  it("delta - deltaUpdateIntervalMs must be 0 or more", () => {
    expect(() =>
      createGateway({
        storage: memoryStorage(),
        runtime: scriptedRuntime(async function* () {}),
        deltaUpdateIntervalMs: -1,
      } as GatewayOptions),
    ).toThrow(/deltaUpdateIntervalMs/);
  });

  it("delta - hello.ok lists the delta feature", async () => {
    h = await startGateway();
    const device = await Client.connect(h.url, { caps: { delta: true } });
    expect(device.of("hello.ok")[0]!.payload.features).toContain("delta");
  });

  it("delta - a slow consumer gets one joined append from what it holds once its socket drains", async () => {
    const release = gate();
    const atGate = gate();
    const produced = gate();
    const tenth = Array.from({ length: 10 }, (_, i) => `${i}🙂,`).join("");
    h = await startGateway({
      updateIntervalMs: 1,
      deltaUpdateIntervalMs: 0,
      backpressure: { softBytes: 1000, hardBytes: 100_000 },
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < 40; i++) {
          if (i === 10) {
            atGate.release();
            await release.wait;
          }
          yield { type: "text", delta: `${i}🙂,` } as RuntimeEvent;
          await sleep(3);
        }
        // The generator resumes here once the gateway has taken the 40th delta.
        produced.release();
        await sleep(300);
      }),
    });
    const buffered = { value: 0 };
    const slow = fakeConnection(buffered);
    const updates = () => slow.frames().filter((f) => f.type === "message.update");
    const held = () =>
      updates().length ? assemble(slow.frames(), updates()[0]!.payload.message_id as string).text : "";
    const handle = h.gateway.accept(slow.conn);
    handle.receiveText(
      JSON.stringify({ type: "hello", payload: { token: "", device_id: "slow", caps: { delta: true } } }),
    );
    await until(() => slow.frames().some((f) => f.type === "hello.ok"), "hello.ok");
    handle.receiveText(JSON.stringify({ type: "message.send", payload: { chat_id: "default", text: "go" } }));
    // The first ten deltas reach the device before its socket stalls (on a loaded machine too).
    await atGate.wait;
    await until(() => held() === tenth, "the tenth delta held");
    const before = updates().length;
    buffered.value = 5000; // the socket stops draining
    release.release();
    await produced.wait;
    expect(updates()).toHaveLength(before);
    buffered.value = 0;
    const expected = Array.from({ length: 40 }, (_, i) => `${i}🙂,`).join("");
    await until(() => held() === expected, "every delta held");
    expect(updates()).toHaveLength(before + 1);
    // The joined append starts where the device stood before its socket stalled.
    expect(updates().at(-1)!.payload.offset).toBe(tenth.length);
  });

  it("delta - a device joining mid-stream gets the whole text first, then appends", async () => {
    const release = gate();
    h = await startGateway({
      updateIntervalMs: 1,
      deltaUpdateIntervalMs: 0,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "first half 🌗 " } as RuntimeEvent;
        await release.wait;
        for (const part of ["and ", "the ", "rest 🌕"]) {
          yield { type: "text", delta: part } as RuntimeEvent;
          await sleep(5);
        }
      }),
    });
    const first = await Client.connect(h.url, { caps: { delta: true } });
    const echo = await first.request("message.send", { chat_id: "default", text: "go" });
    await first.waitFor((f) => f.type === "message.update");
    const late = await Client.connect(h.url, { caps: { delta: true } });
    release.release();
    const stop = await late.waitFor((f) => f.type === "message.stop");
    expect(stop.payload.reply_to).toBe(echo.payload.message_id);
    const updates = late.of("message.update");
    expect(updates[0]!.payload.text).toMatch(/^first half 🌗 /);
    expect(updates.slice(1).every((f) => typeof f.payload.offset === "number")).toBe(true);
    expect(updates.length).toBeGreaterThan(1);
    const held = assemble(late.frames, stop.payload.message_id);
    expect(held.full).toBe(1);
    expect(held.text).toBe("first half 🌗 and the rest 🌕");
    expect(held.text).toBe(stop.payload.final_text);
  });

  it("delta - an update whose text does not extend the device's copy replaces it with the whole text", async () => {
    const release = gate();
    const bus = memoryBus();
    h = await startGateway({
      bus,
      updateIntervalMs: 1,
      deltaUpdateIntervalMs: 0,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "draft one" } as RuntimeEvent;
        await release.wait;
        yield { type: "text", delta: ", then more" } as RuntimeEvent;
        await sleep(5);
      }),
    });
    const delta = await Client.connect(h.url, { caps: { delta: true } });
    const full = await Client.connect(h.url);
    await delta.request("message.send", { chat_id: "default", text: "go" });
    const first = await delta.waitFor((f) => f.type === "message.update");
    const id = first.payload.message_id as string;
    // Another publisher (say another gateway process) rewrote the text.
    const rewrite = { message_id: id, chat_id: "default", thread_id: null, text: "rewritten" };
    bus.publish({ owner: ANONYMOUS_OWNER, frame: { type: "message.update", payload: rewrite } });
    await delta.waitFor((f) => f.type === "message.update" && f.payload.text === "rewritten");
    await full.waitFor((f) => f.type === "message.update" && f.payload.text === "rewritten");
    release.release();
    const stop = await delta.waitFor((f) => f.type === "message.stop");
    const updates = delta.of("message.update");
    expect(updates[0]!.payload).toMatchObject({ offset: 0, append: "draft one" });
    expect(updates[1]!.payload).toMatchObject({ text: "rewritten" });
    expect(updates[1]!.payload.offset).toBeUndefined();
    // The turn's next text does not extend "rewritten" either: whole again, and consistent at the end.
    expect(updates[2]!.payload).toMatchObject({ text: "draft one, then more" });
    expect(assemble(delta.frames, id).text).toBe(stop.payload.final_text);
  });
});
