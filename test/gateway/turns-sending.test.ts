import { describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, gatewayPerTest } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

const startGateway = gatewayPerTest();

describe("turns", () => {
  it("turns - a retried send with the same client_msg_id returns the same echo to the sender only and starts no second turn", async () => {
    const storage = memoryStorage();
    const h = await startGateway({ storage });
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
    const restarted = await startGateway({ storage });
    const c = await Client.connect(restarted.url);
    const third = await c.request("message.send", { chat_id: "default", text: "once", client_msg_id: "k-1" });
    expect(third.payload.message_id).toBe(echo.payload.message_id);
    await sleep(100);
    expect(c.of("typing")).toEqual([]);
  });

  it("turns - concurrent duplicates of one client_msg_id store one message", async () => {
    const h = await startGateway();
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

  it("turns - empty text without media is refused and nothing is stored", async () => {
    const h = await startGateway();
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
    const h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    const { echo, final } = await c.say({ chat_id: "default", text: "   " });
    expect(echo.payload).toMatchObject({ role: "user", text: "   ", thread_id: null });
    expect(final.payload.final_text).toBe("got [   ]");
    const history = (await c.request("history", { chat_id: "default" })).payload.messages;
    expect(history.map((m: any) => m.text)).toEqual(["   ", "got [   ]"]);
  });

  it("turns - too many turns in flight for one owner is rate_limited and not stored", async () => {
    const g = gate();
    const h = await startGateway({
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
    const h = await startGateway();
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
