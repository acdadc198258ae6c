// Every device, the same conversation (docs/PROTOCOL.md §14.3, §14.4) through the wire: a device
// joining mid-turn sees the running answer, its running tools, the open ask and the lane's queue,
// in that order (also with caps.delta); turn.stop from another device; when_busy interrupt (the
// queue stays oldest first); a waiting message deleted.
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRuntime } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Frame, type Harness } from "../gateway/harness.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await removeTempDirs();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(25);
  expect(check()).toBe(true);
}

/** Streams words slowly; "ask" asks for an approval after a tool starts; "tool" leaves a tool running. */
const slowRuntime: AgentRuntime = {
  async *turn(input) {
    if (input.message.text === "ask") {
      yield { type: "text", delta: "Checking. " };
      yield { type: "tool-start", id: "t1", name: "rm", args: { path: "/tmp/x" } };
      const answer = await input.ask({
        kind: "approval",
        title: "Delete /tmp/x?",
        body: "rm /tmp/x",
        tool: { name: "rm", args: { path: "/tmp/x" } },
      });
      yield { type: "tool-end", id: "t1", output: answer.option_id ?? answer.outcome, ok: true };
      yield { type: "text", delta: `done: ${answer.option_id ?? answer.outcome}` };
      return;
    }
    for (const word of `You said: ${input.message.text}`.split(" ")) {
      if (input.signal.aborted) return;
      await sleep(40);
      yield { type: "text", delta: `${word} ` };
    }
  },
};

const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");

async function gateway() {
  harness = await startGateway({ storage: sqlJsStorage({ dir: await tempDir() }), runtime: slowRuntime });
  return harness;
}

/** The frames a device got right after hello.ok (up to `count` of the given types). */
function framesOfType(client: Client, type: string): Frame[] {
  return client.frames.filter((f) => f.type === type);
}

describe("joining mid-flight", () => {
  it("join - a device connecting while an answer streams gets its start, the whole text so far and typing on", async () => {
    const h = await gateway();
    const a = await Client.connect(h.url);
    const echo = await a.request("message.send", { chat_id: "default", text: long });
    const update = await a.waitFor((f) => f.type === "message.update" && String(f.payload.text).length > 20, 10_000);
    const b = await Client.connect(h.url);
    const start = await b.waitFor((f) => f.type === "message.start");
    expect(start.payload).toMatchObject({
      message_id: update.payload.message_id,
      role: "assistant",
      chat_id: "default",
      thread_id: null,
    });
    const joined = await b.waitFor((f) => f.type === "message.update");
    expect(String(joined.payload.text).length).toBeGreaterThan(20);
    expect(String(joined.payload.text).startsWith("You said:")).toBe(true);
    await b.waitFor((f) => f.type === "typing" && f.payload.on === true);
    // A delta device gets the whole text too.
    const c = await Client.connect(h.url, { caps: { delta: true } });
    expect((await c.waitFor((f) => f.type === "message.update")).payload.text).toMatch(/^You said:/);
    const stop = await b.waitFor((f) => f.type === "message.stop", 15_000);
    expect(stop.payload.reply_to).toBe(echo.payload.message_id);
  });

  it("join - during an ask: the card (with caps.pickers) or the notification, the running tool, no typing; the joiner can answer", async () => {
    const h = await gateway();
    const a = await Client.connect(h.url, { caps: { pickers: true } });
    await a.request("message.send", { chat_id: "default", text: "ask" });
    const card = await a.waitFor((f) => f.type === "picker.approval", 10_000);
    const phone = await Client.connect(h.url, { caps: { pickers: true } });
    const seen = await phone.waitFor((f) => f.type === "picker.approval");
    expect(seen.payload.picker_id).toBe(card.payload.picker_id);
    const tool = await phone.waitFor((f) => f.type === "tool.start");
    expect(tool.payload).toMatchObject({ name: "rm", args: { path: "/tmp/x" }, index: 0 });
    expect((await phone.waitFor((f) => f.type === "message.update")).payload.text).toBe("Checking. ");
    const plain = await Client.connect(h.url);
    const note = await plain.waitFor((f) => f.type === "notification");
    expect(note.payload).toMatchObject({ kind: "approval", picker_id: card.payload.picker_id });
    expect(framesOfType(plain, "picker.approval")).toEqual([]);
    await sleep(100);
    expect(framesOfType(phone, "typing").filter((f) => f.payload.on === true)).toEqual([]);
    const resolved = await phone.request("picker.select", { picker_id: card.payload.picker_id, option_id: "approve" });
    expect(resolved.type).toBe("picker.resolved");
    const stop = await phone.waitFor((f) => f.type === "message.stop", 10_000);
    expect(stop.payload.final_text).toContain("done: approve");
  });

  it("join - the lane's queue: a joiner gets lane.queue; deleting a waiting message updates it everywhere and it never runs", async () => {
    const h = await gateway();
    const a = await Client.connect(h.url);
    await a.request("message.send", { chat_id: "default", text: long });
    await a.waitFor((f) => f.type === "message.update", 10_000);
    const w1 = await a.request("message.send", { chat_id: "default", text: "first waiting" });
    const w2 = await a.request("message.send", { chat_id: "default", text: "second waiting" });
    const queued = await a.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 2);
    expect(queued.payload).toEqual({
      chat_id: "default",
      thread_id: null,
      message_ids: [w1.payload.message_id, w2.payload.message_id],
    });
    const b = await Client.connect(h.url);
    const joined = await b.waitFor((f) => f.type === "lane.queue");
    expect(joined.payload.message_ids).toEqual([w1.payload.message_id, w2.payload.message_id]);
    const from = b.frames.length;
    const fromA = a.frames.length;
    await b.request("message.delete", { chat_id: "default", message_ids: [w1.payload.message_id] });
    const shrunk = await a.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 1, 5_000, fromA);
    expect(shrunk.payload.message_ids).toEqual([w2.payload.message_id]);
    await b.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 1, 5_000, from);
    const last = await a.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === w2.payload.message_id,
      20_000,
    );
    expect(last.payload.final_text).toContain("second waiting");
    expect(a.frames.some((f) => f.type === "message.stop" && f.payload.reply_to === w1.payload.message_id)).toBe(false);
    await a.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 0);
  });

  it("join - a caps.delta device joining a running turn with an open ask and a waiting message gets the turn's frames, then the ask, then lane.queue, also after sync.done", async () => {
    // A delta device's updates are paced (docs/PROTOCOL.md §12); a long pace holds the second
    // join's update for the whole test unless nothing may overtake it.
    harness = await startGateway({
      storage: sqlJsStorage({ dir: await tempDir() }),
      runtime: slowRuntime,
      deltaUpdateIntervalMs: 60_000,
    });
    const a = await Client.connect(harness.url, { caps: { pickers: true } });
    await a.request("message.send", { chat_id: "default", text: "ask" });
    await a.waitFor((f) => f.type === "picker.approval", 10_000);
    const waiting = await a.request("message.send", { chat_id: "default", text: "after the ask" });
    await a.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 1);
    for (const caps of [{ delta: true, pickers: true }, { delta: true }, { pickers: true }]) {
      const b = await Client.connect(harness.url, { caps });
      const ask = caps.pickers ? "picker.approval" : "notification";
      const expected = ["message.start", "message.update", "tool.start", ask, "lane.queue"];
      // Right after hello.ok, and again right after sync.done (docs/PROTOCOL.md §14.3).
      for (const after of ["hello.ok", "sync.done"]) {
        const from = b.frames.findIndex((f) => f.type === after) + 1;
        await b.waitFor((f) => f.type === "lane.queue", 10_000, from);
        const kinds = b.frames.slice(from).map((f: Frame) => f.type);
        expect(kinds.slice(0, expected.length), `${JSON.stringify(caps)} after ${after}`).toEqual(expected);
        expect(b.frames.find((f, i) => i >= from && f.type === "lane.queue")!.payload.message_ids).toEqual([
          waiting.payload.message_id,
        ]);
        if (after === "hello.ok") await b.request("sync", { cursor: 0 });
      }
    }
  });

  it("join - where nothing waits a joiner costs the storage one queue read, not two; with a message waiting it also reads what is streaming", async () => {
    const reads = { waitingTurns: 0, unfinishedMessages: 0 };
    const storage = sqlJsStorage({ dir: await tempDir() });
    // The storage as the gateway sees it, counting the two reads a joiner's queue takes.
    const counted = new Proxy(storage, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (key === "waitingTurns" || key === "unfinishedMessages") reads[key]++;
          return value.apply(target, args);
        };
      },
    });
    harness = await startGateway({ storage: counted, runtime: slowRuntime });
    // Starting, the gateway looks for answers a crash left streaming (docs/PROTOCOL.md §4.2).
    const started = { ...reads };
    const a = await Client.connect(harness.url);
    await until(() => reads.waitingTurns > started.waitingTurns);
    await a.request("ping");
    expect(reads.unfinishedMessages).toBe(started.unfinishedMessages);
    await a.request("message.send", { chat_id: "default", text: long });
    await a.waitFor((f) => f.type === "message.update", 10_000);
    const waiting = await a.request("message.send", { chat_id: "default", text: "waiting" });
    await a.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 1);
    const before = reads.unfinishedMessages;
    const b = await Client.connect(harness.url);
    const joined = await b.waitFor((f) => f.type === "lane.queue");
    expect(joined.payload.message_ids).toEqual([waiting.payload.message_id]);
    expect(reads.unfinishedMessages).toBeGreaterThan(before);
  });
});

describe("stopping and interrupting", () => {
  it("turn.stop - from another device stops the running answer and names it; with nothing running, message_id is null; nothing is stored for it", async () => {
    const h = await gateway();
    const a = await Client.connect(h.url);
    await a.request("message.send", { chat_id: "default", text: long });
    const update = await a.waitFor((f) => f.type === "message.update", 10_000);
    const b = await Client.connect(h.url);
    const stopped = await b.request("turn.stop", { chat_id: "default" });
    expect(stopped).toMatchObject({
      type: "turn.stopped",
      payload: { chat_id: "default", thread_id: null, message_id: update.payload.message_id },
    });
    const end = await a.waitFor((f) => f.type === "message.stop");
    expect(end.payload.status).toBe("stopped");
    const idle = await b.request("turn.stop", { chat_id: "default" });
    expect(idle.payload.message_id).toBeNull();
    const page = await b.request("history", { chat_id: "default" });
    expect(page.payload.messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(1);
    expect((await b.request("turn.stop", { chat_id: "nope" })).payload.code).toBe("not_found");
  });

  it("when_busy - while an interrupting message takes the lane over, lane.queue lists only the older waiting messages, oldest first", async () => {
    const h = await gateway();
    const a = await Client.connect(h.url);
    const first = await a.request("message.send", { chat_id: "default", text: long });
    await a.waitFor((f) => f.type === "message.update", 10_000);
    const older = await a.request("message.send", { chat_id: "default", text: "patient" });
    const newer = await a.request("message.send", { chat_id: "default", text: "older still waits" });
    const from = a.frames.length;
    const urgent = await a.request("message.send", { chat_id: "default", text: "urgent", when_busy: "interrupt" });
    const [patient, later, now] = [older, newer, urgent].map((e) => e.payload.message_id);
    await a.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === first.payload.message_id, 20_000);
    // A device joining while the interrupting answer runs sees the same queue.
    const b = await Client.connect(h.url);
    await b.waitFor((f) => f.type === "lane.queue");
    await a.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === later, 30_000);
    const queues = a.frames
      .slice(from)
      .filter((f) => f.type === "lane.queue")
      .map((f) => f.payload.message_ids);
    expect(queues.length).toBeGreaterThan(0);
    // Every list oldest first, and the interrupting message, answered at once, in none of them.
    for (const ids of queues) expect(ids).toEqual([patient, later].filter((id) => ids.includes(id)));
    expect(queues.flat()).not.toContain(now);
    expect(b.of("lane.queue")[0].payload.message_ids).toEqual([patient, later]);
  });
  it("when_busy - interrupt stops the running answer and runs ahead of the waiting message; steer on a runtime without it is refused and stores nothing", async () => {
    const h = await gateway();
    const a = await Client.connect(h.url);
    const first = await a.request("message.send", { chat_id: "default", text: long });
    await a.waitFor((f) => f.type === "message.update", 10_000);
    const waiting = await a.request("message.send", { chat_id: "default", text: "patient" });
    const urgent = await a.request("message.send", { chat_id: "default", text: "urgent", when_busy: "interrupt" });
    const stops: Frame[] = [];
    for (const id of [first, urgent, waiting].map((e) => e.payload.message_id))
      stops.push(await a.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === id, 20_000));
    expect(stops[0].payload.status).toBe("stopped");
    const order = stops.map((s) => a.frames.indexOf(s));
    expect(order).toEqual([...order].sort((x, y) => x - y));
    const refused = await a.request("message.send", { chat_id: "default", text: "steer me", when_busy: "steer" });
    expect(refused.payload.code).toBe("unsupported");
    const page = await a.request("history", { chat_id: "default", limit: 50 });
    expect(page.payload.messages.some((m: { text: string }) => m.text === "steer me")).toBe(false);
  });
});
