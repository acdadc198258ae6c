import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type RuntimeEvent, type StoredMessage } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const maxSeq = (c: Client) => Math.max(0, ...c.frames.map((f) => f.seq ?? 0));

describe("sync", () => {
  it("sync - a socket dropped mid-turn reconnects and gets exactly the stored frames it missed", async () => {
    const g = gate();
    h = await startGateway({
      runtime: scriptedRuntime(async function* (input) {
        yield { type: "text", delta: "part one " } as RuntimeEvent;
        if (input.message.text === "long") await g.wait;
        yield { type: "text", delta: "part two" } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url, { device_id: "phone" });
    await a.request("message.send", { chat_id: "default", text: "long" });
    await b.waitFor((f) => f.type === "message.start");
    const cursor = maxSeq(b);
    expect(cursor).toBe(1);
    b.ws.terminate();
    await b.closedPromise;
    g.release();
    await a.waitFor((f) => f.type === "message.stop");
    await a.say({ chat_id: "default", text: "more" });
    await a.request("channel.create", { name: "Later", kind: "channel" });
    const storedOnA = a.frames.filter((f) => f.seq !== undefined && f.seq > cursor).map((f) => f.seq);

    const b2 = await Client.connect(h.url, { device_id: "phone" });
    expect(b2.frames[0].payload.cursor).toBe(Math.max(...(storedOnA as number[])));
    const done = await b2.request("sync", { cursor });
    const replayed = b2.frames.filter((f) => f.seq !== undefined);
    expect(replayed.map((f) => f.seq)).toEqual(storedOnA);
    expect(replayed.map((f) => f.type)).toEqual(["message.stop", "message", "message.stop", "channel.created"]);
    expect(replayed[0].payload.final_text).toBe("part one part two");
    expect(done).toMatchObject({ type: "sync.done", payload: { cursor: storedOnA.at(-1) } });
    expect(done.payload.reset).toBeUndefined();
    // nothing twice, and sync is not history: it replays nothing live-only
    expect(new Set(replayed.map((f) => f.seq)).size).toBe(replayed.length);
    expect(b2.of("message.update")).toEqual([]);
  });

  it("sync - frames stored while a replay runs arrive exactly once", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    for (let i = 0; i < 30; i++) await a.request("channel.create", { name: `c${i}`, kind: "channel" });
    const b = await Client.connect(h.url);
    const writes = (async () => {
      for (let i = 0; i < 10; i++) await a.request("channel.create", { name: `live${i}`, kind: "channel" });
    })();
    await b.request("sync", { cursor: 0 });
    await writes;
    await b.waitFor((f) => f.type === "channel.created" && f.payload.name === "live9");
    const seqs = b.frames.filter((f) => f.seq !== undefined).map((f) => f.seq!);
    expect([...seqs].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    // Everything after sync.done is newer than its cursor.
    const doneAt = b.frames.findIndex((f) => f.type === "sync.done");
    const cursor = b.frames[doneAt].payload.cursor;
    expect(b.frames.slice(doneAt + 1).every((f) => f.seq === undefined || f.seq > cursor)).toBe(true);
  });

  it("sync - a device without streaming replays a stored message.stop as message", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const { final } = await a.say({ chat_id: "default", text: "hi" });
    const b = await Client.connect(h.url, { caps: { streaming: false } });
    await b.request("sync", { cursor: 0 });
    const replayed = b.frames.filter((f) => f.seq !== undefined);
    expect(replayed.map((f) => f.type)).toEqual(["message", "message"]);
    expect(replayed[1]).toMatchObject({
      seq: final.seq,
      payload: { role: "assistant", text: "You said: hi", message_id: final.payload.message_id },
    });
  });

  it("sync - a cursor older than the kept outbox, or newer than any given, answers reset", async () => {
    h = await startGateway({ retention: { maxFrames: 5 }, rateLimit: { perSecond: 1000, burst: 1000 } });
    const a = await Client.connect(h.url);
    for (let i = 0; i < 110; i++) await a.request("channel.create", { name: `c${i}`, kind: "channel" });
    await sleep(50);
    const old = await a.request("sync", { cursor: 3 });
    expect(old.payload).toEqual({ cursor: 110, reset: true });
    const future = await a.request("sync", { cursor: 999 });
    expect(future.payload).toEqual({ cursor: 110, reset: true });
    const recent = await a.request("sync", { cursor: 108 });
    expect(recent.payload).toEqual({ cursor: 110 });
    expect((await a.request("sync", { cursor: -1 })).payload.code).toBe("unsupported");
  });
});

describe("history", () => {
  it("history - walks 1,000 messages with shared timestamps, oldest first, no gap and no duplicate", async () => {
    const storage = memoryStorage();
    const messages: StoredMessage[] = Array.from({ length: 1000 }, (_, i) => ({
      message_id: `m${String((i * 7919) % 1000).padStart(4, "0")}`,
      role: i % 2 ? "assistant" : "user",
      text: `message ${i}`,
      reasoning: "",
      ts: 1_700_000_000_000 + Math.floor(i / 10),
      media: [],
      chat_id: "default",
      thread_id: null,
      ...(i % 2 ? { runtime: { model: "m", latency: 1 } } : {}),
    }));
    await storage.commit(ANONYMOUS_OWNER, { messages });
    h = await startGateway({ storage });
    const c = await Client.connect(h.url);
    const seen: string[] = [];
    let before: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await c.request("history", {
        chat_id: "default",
        limit: 37,
        ...(before ? { before_message_id: before } : {}),
      });
      expect(page.type).toBe("history");
      seen.unshift(...page.payload.messages.map((m: any) => m.message_id));
      pages++;
      if (!page.payload.has_more) break;
      before = page.payload.oldest_message_id;
    }
    expect(pages).toBe(Math.ceil(1000 / 37));
    expect(new Set(seen).size).toBe(1000);
    const byTsThenId = [...messages]
      .sort((x, y) => x.ts - y.ts || (x.message_id < y.message_id ? -1 : 1))
      .map((m) => m.message_id);
    expect(seen).toEqual(byTsThenId);
  });

  it("history - limit default 50, clamp 200, below 1 or not an integer unsupported; unknown before is not_found; empty page", async () => {
    const storage = memoryStorage();
    await storage.commit(ANONYMOUS_OWNER, {
      messages: Array.from({ length: 250 }, (_, i) => ({
        message_id: `m${1000 + i}`,
        role: "user" as const,
        text: `t${i}`,
        reasoning: "",
        ts: i,
        media: [],
        chat_id: "default",
        thread_id: null,
      })),
    });
    h = await startGateway({ storage });
    const c = await Client.connect(h.url);
    const first = await c.request("history", { chat_id: "default" });
    expect(first.payload.messages).toHaveLength(50);
    expect(first.payload).toMatchObject({ has_more: true, oldest_message_id: "m1200" });
    expect(first.payload.messages.at(-1).message_id).toBe("m1249");
    expect((await c.request("history", { chat_id: "default", limit: 500 })).payload.messages).toHaveLength(200);
    expect((await c.request("history", { chat_id: "default", limit: 0 })).payload.code).toBe("unsupported");
    expect((await c.request("history", { chat_id: "default", limit: 1.5 })).payload.code).toBe("unsupported");
    expect((await c.request("history", { chat_id: "default", before_message_id: "zzz" })).payload.code).toBe(
      "not_found",
    );
    const other = (await c.request("channel.create", { name: "Empty", kind: "channel" })).payload.chat_id;
    expect((await c.request("history", { chat_id: other })).payload).toMatchObject({
      messages: [],
      has_more: false,
      oldest_message_id: null,
    });
  });

  it("history - the runtime footer survives a restart", async () => {
    const storage = memoryStorage();
    h = await startGateway({ storage });
    const a = await Client.connect(h.url);
    const { final } = await a.say({ chat_id: "default", text: "keep" });
    await h.close();
    h = await startGateway({ storage });
    const b = await Client.connect(h.url);
    const item = (await b.request("history", { chat_id: "default" })).payload.messages[1];
    expect(item).toMatchObject({
      role: "assistant",
      text: "You said: keep",
      model: "demo",
      runtime: final.payload.runtime,
      reasoning: "",
      media: [],
    });
    expect(typeof item.tokens).toBe("number");
  });

  it("restart - a turn in flight when the gateway stops gets a terminal message.stop marked interrupted", async () => {
    const storage = memoryStorage();
    const g = gate();
    h = await startGateway({
      storage,
      checkpointIntervalMs: 1,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "half an ans" } as RuntimeEvent;
        await sleep(20);
        yield { type: "text", delta: "wer" } as RuntimeEvent;
        await g.wait;
      }),
    });
    const a = await Client.connect(h.url);
    await a.request("message.send", { chat_id: "default", text: "go" });
    await a.waitFor((f) => f.type === "message.update" && f.payload.text === "half an answer");
    await sleep(50);
    // A crash: the process dies with the turn open. Here the next gateway opens the same storage.
    const crashed = h;
    h = await startGateway({ storage });
    const b = await Client.connect(h.url);
    await b.request("sync", { cursor: 1 });
    const stop = b.frames.find((f) => f.type === "message.stop");
    expect(stop?.payload).toMatchObject({ status: "interrupted", final_text: "half an answer" });
    g.release();
    await crashed.close();
  });

  it("shutdown - close() ends running turns as interrupted, stores them, and closes sockets with 1001", async () => {
    h = await startGateway({
      runtime: scriptedRuntime(async function* (input) {
        yield { type: "text", delta: "working" } as RuntimeEvent;
        await new Promise((r) => input.signal.addEventListener("abort", r));
      }),
    });
    const a = await Client.connect(h.url);
    await a.request("message.send", { chat_id: "default", text: "go" });
    await a.waitFor((f) => f.type === "message.start");
    const closing = h.close();
    h = undefined;
    const stop = await a.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({ status: "interrupted", final_text: "working" });
    await closing;
    expect(await a.closedPromise).toBe(1001);
  });
});
