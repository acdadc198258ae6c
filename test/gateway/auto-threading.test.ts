import { describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type RuntimeEvent } from "chat-gateway";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, gatewayPerTest } from "./harness.js";
import { scriptedRuntime, sleep } from "./runtimes.js";

const startGateway = gatewayPerTest();

/** A runtime that answers "ok" and has no generateTitle, so a thread keeps its derived title. */
const answersOk = () =>
  scriptedRuntime(async function* () {
    yield { type: "text", delta: "ok" } as RuntimeEvent;
  });

describe("auto-threading", () => {
  it("auto-threading - mints a thread with a derived title, broadcasts channel.created auto, the turn runs there, then a model title", async () => {
    const h = await startGateway({ runtime: demoRuntime({ delayMs: 0 }) });
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const text = "Plan the quarterly offsite for the whole engineering team in Lisbon\nwith budget details";
    const { echo, final } = await a.say({ chat_id: "default", text, auto_thread: true });
    const created = a.of("channel.created")[0];
    expect(created.payload).toMatchObject({ kind: "thread", parent_chat_id: "default", auto: true });
    expect(created.payload.name.length).toBeLessThanOrEqual(60);
    expect(created.payload.name).toBe("Plan the quarterly offsite for the whole engineering team…");
    expect(created.seq).toBeLessThan(echo.seq!);
    expect(echo.payload).toMatchObject({ chat_id: "default", thread_id: created.payload.chat_id });
    expect(final.payload.thread_id).toBe(created.payload.chat_id);
    const renamed = await a.waitFor(
      (f) => f.type === "channel.renamed" && f.payload.chat_id === created.payload.chat_id,
    );
    expect(renamed.payload.name).toBe("Demo: Plan the quarterly offsite for the");
    expect(renamed.payload.auto).toBeUndefined();
    await b.waitFor((f) => f.type === "channel.renamed");
    expect(b.of("channel.created")[0].payload.auto).toBe(true);
  });

  it("auto-threading - no thread outside the conditions: in a thread, blank text, a slash command, or auto_thread false", async () => {
    const h = await startGateway();
    const a = await Client.connect(h.url);
    const th = (await a.request("channel.create", { name: "T", kind: "thread", parent_chat_id: "default" })).payload
      .chat_id;
    await a.say({ chat_id: th, text: "inside a thread", auto_thread: true });
    await a.say({ chat_id: "default", text: "/help", auto_thread: true });
    await a.say({ chat_id: "default", text: "plain", auto_thread: false });
    await a.say({ chat_id: "default", text: "plain default" });
    // Whitespace-only text is sent, in the flat lane: it has nothing to title a thread with.
    const blank = await a.say({ chat_id: "default", text: " \n ", auto_thread: true });
    expect(blank.echo.payload).toMatchObject({ text: " \n ", thread_id: null });
    expect(blank.final.payload.thread_id).toBeNull();
    const created = a.of("channel.created");
    expect(created).toHaveLength(1);
    expect(created[0].payload.chat_id).toBe(th);
  });

  it("auto-threading - auto: true is on channel.created only; channel.list, a replay's later frames and the server API carry the thread as it is", async () => {
    const h = await startGateway({ runtime: answersOk() });
    const a = await Client.connect(h.url);
    await a.say({ chat_id: "default", text: "a thread of its own", auto_thread: true });
    const created = a.of("channel.created")[0];
    expect(created.payload.auto).toBe(true);
    const listed = (await a.request("channel.list", {})).payload.channels.find(
      (c: any) => c.chat_id === created.payload.chat_id,
    );
    expect(listed).toMatchObject({ kind: "thread", name: "a thread of its own" });
    expect(listed).not.toHaveProperty("auto");
    expect((await h.gateway.channels.list(ANONYMOUS_OWNER)).some((c) => "auto" in c)).toBe(false);
    await a.request("channel.update", { chat_id: created.payload.chat_id, favorite: true });
    const late = await Client.connect(h.url);
    await late.request("sync", { cursor: 0 });
    const replayed = late.frames.filter(
      (f) => f.payload?.chat_id === created.payload.chat_id && f.type.startsWith("channel."),
    );
    expect(replayed.map((f) => [f.type, f.payload.auto])).toEqual([
      ["channel.created", true],
      ["channel.renamed", undefined],
    ]);
  });

  it("auto-threading - without generateTitle the derived title stays", async () => {
    const h = await startGateway({ runtime: answersOk() });
    const a = await Client.connect(h.url);
    await a.say({ chat_id: "default", text: "short title", auto_thread: true });
    await sleep(50);
    expect(a.of("channel.renamed")).toEqual([]);
    expect(a.of("channel.created")[0].payload.name).toBe("short title");
  });
});
