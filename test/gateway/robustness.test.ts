import { afterEach, describe, expect, it } from "vitest";
import type { Connection, RuntimeEvent } from "chat-gateway";
import { Client, startGateway, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";
import { until } from "../storage/sqljs-helpers.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("robustness", () => {
  it("robustness - garbage frames get clear errors and leave this and other connections working", async () => {
    h = await startGateway({ rateLimit: { perSecond: 1000, burst: 1000 } });
    const bad = await Client.connect(h.url);
    const good = await Client.connect(h.url);
    const garbage = [
      "{not json",
      "[]",
      "null",
      "42",
      JSON.stringify({ type: "message.send", id: "g1", payload: { chat_id: 5, text: [] } }),
      JSON.stringify({ type: "history", id: "g2", payload: { chat_id: "default", limit: "ten" } }),
      JSON.stringify({ type: "nope.nope", id: "g3" }),
      JSON.stringify({ type: "picker.select", id: "g4", payload: {} }),
      JSON.stringify({ type: "commands.complete", id: "g5", payload: { prefix: "/h" } }),
      JSON.stringify({ type: "search", id: "g6", payload: { query: "x".repeat(500_000), scope: "all" } }),
      JSON.stringify({ type: "message.send", id: "g7", payload: { chat_id: "default", text: "\u0001\uffff" } }),
      // A lone surrogate is no text any storage can keep (docs/PROTOCOL.md §1).
      JSON.stringify({ type: "message.send", id: "g13", payload: { chat_id: "default", text: "odd \ud800" } }),
      JSON.stringify({ type: "channel.create", id: "g8", payload: { name: "x".repeat(600_000), kind: "channel" } }),
      JSON.stringify({ type: "media.upload.end", id: "g9", payload: { media_ref: "never", sha256: "00" } }),
      JSON.stringify({ type: "media.pull", id: "g10", payload: { media_id: "never" } }),
      JSON.stringify({ type: "search", id: "g11", payload: { query: "x", scope: "chat" } }),
      JSON.stringify({ type: "message.delete", id: "g12", payload: { chat_id: "default", message_ids: ["ghost"] } }),
    ];
    for (const text of garbage) bad.raw(text);
    bad.raw(Buffer.from([1, 2, 3]));
    await bad.request("ping", {});
    const errors = bad.of("error");
    expect(errors.length).toBeGreaterThanOrEqual(14);
    const byId = Object.fromEntries(errors.filter((e) => e.id).map((e) => [e.id, e.payload.code]));
    expect(byId).toMatchObject({
      g1: "unsupported",
      g2: "unsupported",
      g3: "unsupported",
      g4: "unsupported",
      g5: "unsupported",
      g8: "unsupported",
      g9: "not_found",
      g10: "not_found",
      g11: "unsupported",
      g12: "not_found",
      g13: "unsupported",
    });
    expect(
      errors
        .filter((e) => !e.id)
        .slice(0, 4)
        .map((e) => e.payload.code),
    ).toEqual(["unsupported", "unsupported", "unsupported", "unsupported"]);
    for (const e of errors) expect(e.payload.message).not.toMatch(/at .*\.ts:\d+/);
    // the odd-but-valid text was taken as a message
    await bad.waitFor((f) => f.type === "message.stop");
    expect((await good.say({ chat_id: "default", text: "still fine" })).final.payload.final_text).toBe(
      "You said: still fine",
    );
  });

  it("robustness - a text frame over 1 MiB closes with 1009 and other connections go on", async () => {
    h = await startGateway();
    const big = await Client.connect(h.url);
    const other = await Client.connect(h.url);
    big.raw(JSON.stringify({ type: "ping", payload: { pad: "x".repeat(1024 * 1024) } }));
    expect(await big.closedPromise).toBe(1009);
    expect((await other.request("ping", { ts: 1 })).type).toBe("pong");
  });

  it("robustness - a text frame that is not valid UTF-8 closes with 1007, with no error frame, and other connections go on", async () => {
    h = await startGateway();
    const bad = await Client.connect(h.url);
    const other = await Client.connect(h.url);
    const before = bad.frames.length;
    // A ping frame with a lone continuation byte where its id's text should be; sent as text, as is.
    const frame = Buffer.concat([Buffer.from('{"type":"ping","id":"'), Buffer.from([0x80, 0xff]), Buffer.from('"}')]);
    bad.ws.send(frame, { binary: false });
    expect(await bad.closedPromise).toBe(1007);
    expect(bad.frames.slice(before)).toEqual([]);
    expect((await other.request("ping", { ts: 1 })).type).toBe("pong");
    expect((await other.say({ chat_id: "default", text: "still fine" })).final.payload.final_text).toBe(
      "You said: still fine",
    );
  });

  it("robustness - the gateway's own frame limit applies to any transport", async () => {
    h = await startGateway({ maxFrameBytes: 1000 }, { maxPayload: 10_000_000 });
    const c = await Client.connect(h.url);
    c.raw(JSON.stringify({ type: "ping", payload: { pad: "é".repeat(600) } }));
    expect(await c.closedPromise).toBe(1009);
  });

  it("robustness - over the frame budget the frame is refused with rate_limited and not processed", async () => {
    h = await startGateway({ rateLimit: { perSecond: 5, burst: 10 } });
    const c = await Client.connect(h.url);
    for (let i = 0; i < 30; i++) c.send("channel.create", { name: `c${i}`, kind: "channel" }, `q${i}`);
    await c.waitFor((f) => f.id === "q29");
    await sleep(100);
    const limited = c.frames.filter((f) => f.type === "error" && f.payload.code === "rate_limited");
    const created = c.of("channel.created");
    expect(limited.length).toBeGreaterThanOrEqual(15);
    expect(created.length + limited.length).toBe(30);
    await sleep(1100);
    expect((await c.request("ping", {})).type).toBe("pong");
    const list = await c.request("channel.list", {});
    expect(list.payload.channels).toHaveLength(created.length + 1);
  });

  it("robustness - a storage failure is internal, leaks nothing, and the connection goes on", async () => {
    const { memoryStorage } = await import("chat-gateway/storage/memory");
    const storage = memoryStorage();
    let fail = false;
    const flaky = {
      ...storage,
      async search(...args: Parameters<typeof storage.search>) {
        if (fail) throw new Error("disk on fire at /secret/path");
        return storage.search(...args);
      },
    };
    h = await startGateway({ storage: flaky });
    const c = await Client.connect(h.url);
    fail = true;
    const answer = await c.request("search", { query: "x", scope: "all" });
    expect(answer.payload).toEqual({ code: "internal", message: "internal error" });
    fail = false;
    expect((await c.request("search", { query: "x", scope: "all" })).type).toBe("search.results");
  });
});

function fakeConnection(buffered: { value: number }) {
  const sent: string[] = [];
  let closed: number | undefined;
  const conn: Connection = {
    send: (t) => void sent.push(t),
    sendBinary: () => undefined,
    close: (code) => {
      closed = code;
    },
    get bufferedAmount() {
      return buffered.value;
    },
    context: {},
  };
  return { conn, sent, closedCode: () => closed };
}

describe("slow consumers", () => {
  it("slow consumers - past the soft limit a device gets only the latest update of each message; past the hard cap it is closed with 1013", async () => {
    const text = "y".repeat(3000);
    h = await startGateway({
      updateIntervalMs: 1,
      backpressure: { softBytes: 1000, hardBytes: 100_000 },
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < text.length; i += 100) {
          yield { type: "text", delta: text.slice(i, i + 100) } as RuntimeEvent;
          await sleep(5);
        }
      }),
    });
    const buffered = { value: 0 };
    const slow = fakeConnection(buffered);
    const handle = h.gateway.accept(slow.conn);
    handle.receiveText(JSON.stringify({ type: "hello", payload: { token: "", device_id: "slow" } }));
    await sleep(20);
    buffered.value = 5000; // the socket stops draining
    const fast = await Client.connect(h.url);
    const { final } = await fast.say({ chat_id: "default", text: "stream" });
    const fastUpdates = fast.of("message.update").length;
    const slowFrames = slow.sent.map((t) => JSON.parse(t));
    expect(slowFrames.filter((f) => f.type === "message.update")).toHaveLength(0);
    expect(slowFrames.find((f) => f.type === "message.stop")?.payload.final_text).toBe(final.payload.final_text);
    expect(fastUpdates).toBeGreaterThan(5);
    buffered.value = 200_000;
    await fast.say({ chat_id: "default", text: "more" });
    expect(slow.closedCode()).toBe(1013);
  });

  it("slow consumers - pending updates go out, latest only, once the socket drains", async () => {
    const produced = gate();
    h = await startGateway({
      updateIntervalMs: 1,
      backpressure: { softBytes: 1000, hardBytes: 100_000 },
      runtime: scriptedRuntime(async function* () {
        for (let i = 0; i < 10; i++) {
          yield { type: "text", delta: `${i}` } as RuntimeEvent;
          await sleep(5);
        }
        // The generator resumes here once the gateway has taken the last delta.
        produced.release();
        await sleep(200);
      }),
    });
    const buffered = { value: 0 };
    const slow = fakeConnection(buffered);
    const frames = () => slow.sent.map((t) => JSON.parse(t) as { type: string; payload: { text?: string } });
    const updates = () => frames().filter((f) => f.type === "message.update");
    const handle = h.gateway.accept(slow.conn);
    handle.receiveText(JSON.stringify({ type: "hello", payload: { token: "", device_id: "slow" } }));
    await until(() => frames().some((f) => f.type === "hello.ok"), "hello.ok");
    buffered.value = 5000;
    handle.receiveText(JSON.stringify({ type: "message.send", payload: { chat_id: "default", text: "go" } }));
    await produced.wait;
    expect(updates()).toHaveLength(0);
    buffered.value = 0;
    await until(() => updates().length > 0, "an update");
    expect(updates()).toHaveLength(1);
    expect(updates()[0]!.payload.text).toBe("0123456789");
  });
});
