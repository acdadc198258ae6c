// Where docs/PROTOCOL.md and the gateway disagreed (issue 28), checked through the wire: a held-back
// update after a delete, notification kinds, caps.push values, outbox pruning by age, and reply_to
// on message.start.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type PushSender, type RuntimeEvent } from "chat-gateway";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const about = (id: string) => (f: Frame) => f.payload?.message_id === id;

describe("deleting a streaming answer", () => {
  it("delete - an update held back for a caps.delta device is dropped with message.deleted, never sent after it", async () => {
    const g = gate();
    h = await startGateway({
      updateIntervalMs: 1,
      // Long enough that the second update is still held back for the delta device when the delete comes.
      deltaUpdateIntervalMs: 400,
      runtime: scriptedRuntime(async function* (input) {
        yield { type: "text", delta: "first" } as RuntimeEvent;
        await sleep(20);
        yield { type: "text", delta: " second" } as RuntimeEvent;
        await Promise.race([g.wait, new Promise((resolve) => input.signal.addEventListener("abort", resolve))]);
      }),
    });
    const delta = await Client.connect(h.url, { caps: { delta: true } });
    const full = await Client.connect(h.url);
    await delta.request("message.send", { chat_id: "default", text: "go" });
    const id = (await delta.waitFor((f) => f.type === "message.start")).payload.message_id as string;
    await delta.waitFor((f) => f.type === "message.update" && f.payload.message_id === id);
    // The full-text device shows the second update was published; the delta device is holding it.
    await full.waitFor((f) => f.type === "message.update" && f.payload.text === "first second");
    expect(delta.of("message.update")).toHaveLength(1);

    await full.request("message.delete", { chat_id: "default", message_ids: [id] });
    await delta.waitFor((f) => f.type === "message.deleted");
    g.release();
    await delta.waitFor((f) => f.type === "typing" && f.payload.on === false);
    await sleep(600); // past the delta interval, when a held update would have gone out
    await delta.request("ping", {});
    const at = delta.frames.findIndex((f) => f.type === "message.deleted");
    expect(delta.frames.slice(at + 1).filter(about(id))).toEqual([]);
  });
});

describe("message.start", () => {
  it("turns - message.start carries reply_to, the user message it answers, like the stop", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const first = await c.request("message.send", { chat_id: "default", text: "one" });
    const second = await c.request("message.send", { chat_id: "default", text: "two" });
    await c.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === second.payload.message_id);
    const starts = c.of("message.start");
    expect(starts.map((f) => f.payload.reply_to)).toEqual([first.payload.message_id, second.payload.message_id]);
    for (const start of starts) {
      const stop = c.frames.find(
        (f) => f.type === "message.stop" && f.payload.message_id === start.payload.message_id,
      )!;
      expect(stop.payload.reply_to).toBe(start.payload.reply_to);
    }
  });
});

describe("notifications", () => {
  it("notifications - gateway.notify refuses a kind outside the protocol's seven with unsupported; nothing is stored or sent", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const cursor = (await c.request("sync", { cursor: 0 })).payload.cursor as number;
    await expect(
      h.gateway.notify(ANONYMOUS_OWNER, { kind: "reminder" as never, title: "t", body: "b" }),
    ).rejects.toMatchObject({
      code: "unsupported",
      message: expect.stringContaining('field "kind"'),
    });
    await expect(
      h.gateway.notify(ANONYMOUS_OWNER, { kind: "generic", title: 5 as never, body: "b" }),
    ).rejects.toMatchObject({ code: "unsupported", message: expect.stringContaining('field "title"') });
    expect((await c.request("sync", { cursor })).payload).toEqual({ cursor });
    expect(c.of("notification")).toEqual([]);
    for (const kind of [
      "channel_renamed",
      "channel_created",
      "channel_deleted",
      "cron",
      "approval",
      "clarify",
      "generic",
    ] as const) {
      await h.gateway.notify(ANONYMOUS_OWNER, { kind, title: kind, body: "b" });
    }
    await c.waitFor(() => c.of("notification").length === 7);
  });
});

describe("caps.push", () => {
  it("hello - a caps.push that names no push channel is unsupported naming the field, then 1008; nothing is stored", async () => {
    h = await startGateway();
    const c = new Client(h.url);
    await c.opened;
    c.send("hello", { token: "", device_id: "typo", caps: { push: "nfty" } }, "h1");
    expect(await c.closedPromise).toBe(1008);
    expect(c.frames).toEqual([
      {
        type: "error",
        id: "h1",
        payload: { code: "unsupported", message: expect.stringContaining('field "caps.push"') },
      },
    ]);
    expect(c.frames[0]!.payload.message).toContain('"ntfy"');
    expect((await h.gateway.options.storage.listDevices(ANONYMOUS_OWNER)).map((d) => d.device_id)).not.toContain(
      "typo",
    );
  });

  it("hello - caps.push accepts none, ntfy, fcm and the name of any push sender the gateway was given", async () => {
    const pager: PushSender = { name: "pager", accepts: () => true, send: async () => undefined };
    h = await startGateway({ push: [pager] });
    for (const push of ["none", "ntfy", "fcm", "pager"]) {
      const c = await Client.connect(h.url, { device_id: `dev-${push}`, caps: { push } });
      await c.close();
    }
    const devices = await h.gateway.options.storage.listDevices(ANONYMOUS_OWNER);
    expect(devices.map((d) => d.caps?.push).sort()).toEqual(["fcm", "none", "ntfy", "pager"]);
  });
});

describe("outbox retention", () => {
  it("sync - frames past the age limit are pruned on a schedule, without the owner storing 100 more", async () => {
    h = await startGateway({ retention: { maxAgeMs: 300 } });
    const c = await Client.connect(h.url);
    for (let i = 0; i < 3; i++) await c.request("channel.create", { name: `c${i}`, kind: "channel" });
    const cursor = (await c.request("sync", { cursor: 0 })).payload;
    expect(cursor).toEqual({ cursor: 3 });
    // Nothing more is stored; within two age limits the scheduled prune has dropped all three.
    const deadline = Date.now() + 3000;
    let done: Frame;
    do {
      await sleep(100);
      done = await c.request("sync", { cursor: 0 });
    } while (!done.payload.reset && Date.now() < deadline);
    expect(done.payload).toEqual({ cursor: 3, reset: true });
  });
});
