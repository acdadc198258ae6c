import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type RuntimeEvent } from "chat-gateway";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, startGateway, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";
import { recordingServer } from "../push/recording-server.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("search", () => {
  it("search - scope all and chat (thread-aware), limit default and clamp, snippets, best match first", async () => {
    h = await startGateway({ rateLimit: { perSecond: 1000, burst: 1000 } });
    const c = await Client.connect(h.url);
    const work = (await c.request("channel.create", { name: "Work", kind: "channel" })).payload.chat_id;
    const th = (await c.request("channel.create", { name: "T", kind: "thread", parent_chat_id: work })).payload.chat_id;
    await c.say({ chat_id: "default", text: "zebra in the default lane" });
    await c.say({ chat_id: work, text: "zebra at work" });
    await c.say({ chat_id: th, text: "zebra zebra in a thread" });
    const all = await c.request("search", { query: "zebra", scope: "all" });
    expect(all.payload).toMatchObject({ query: "zebra", scope: "all" });
    expect(all.payload.hits.length).toBe(6);
    for (const hit of all.payload.hits) {
      expect(Object.keys(hit).sort()).toEqual(["chat_id", "message_id", "role", "snippet", "thread_id", "ts"]);
      expect(hit.snippet.length).toBeLessThanOrEqual(200);
      expect(hit.snippet.toLowerCase()).toContain("zebra");
    }
    expect(all.payload.hits[0].snippet).toContain("zebra zebra");
    const chat = await c.request("search", { query: "zebra", scope: "chat", chat_id: work });
    expect(new Set(chat.payload.hits.map((x: any) => x.thread_id))).toEqual(new Set([null, th]));
    const thread = await c.request("search", { query: "zebra", scope: "chat", chat_id: work, thread_id: th });
    expect(thread.payload.hits.every((x: any) => x.thread_id === th && x.chat_id === work)).toBe(true);
    expect(thread.payload.hits).toHaveLength(2);
    expect((await c.request("search", { query: "zebra", scope: "all", limit: 1 })).payload.hits).toHaveLength(1);
    expect((await c.request("search", { query: "zebra", scope: "all", limit: 0 })).payload.code).toBe("unsupported");
    expect((await c.request("search", { query: "   ", scope: "all" })).payload.hits).toEqual([]);
    expect((await c.request("search", { query: "zebra", scope: "chat" })).payload.code).toBe("unsupported");
    expect((await c.request("search", { query: "zebra", scope: "chat", chat_id: "nope" })).payload.code).toBe(
      "not_found",
    );
    expect((await c.request("search", { query: 'zeb* "unbalanced (', scope: "all" })).type).toBe("search.results");
  });

  it("search - limit default 20 and clamp to search_max", async () => {
    h = await startGateway({ searchMax: 30 });
    const storage = (h.gateway.options as any).storage;
    await storage.commit(ANONYMOUS_OWNER, {
      messages: Array.from({ length: 60 }, (_, i) => ({
        message_id: `m${i}`,
        role: "user",
        text: `needle ${i}`,
        reasoning: "",
        ts: i,
        media: [],
        chat_id: "default",
        thread_id: null,
      })),
    });
    const c = await Client.connect(h.url);
    expect(c.frames[0].payload.limits.search_max).toBe(30);
    expect((await c.request("search", { query: "needle", scope: "all" })).payload.hits).toHaveLength(20);
    expect((await c.request("search", { query: "needle", scope: "all", limit: 999 })).payload.hits).toHaveLength(30);
  });
});

describe("auto-threading", () => {
  it("auto-threading - mints a thread with a derived title, broadcasts channel.created auto, the turn runs there, then a model title", async () => {
    h = await startGateway({ runtime: demoRuntime({ delayMs: 0 }) });
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
    h = await startGateway();
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
    h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "ok" } as RuntimeEvent;
      }),
    });
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
    h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "ok" } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    await a.say({ chat_id: "default", text: "short title", auto_thread: true });
    await sleep(50);
    expect(a.of("channel.renamed")).toEqual([]);
    expect(a.of("channel.created")[0].payload.name).toBe("short title");
  });
});

describe("automation channels and notifications", () => {
  it("automation - message.send is refused and nothing is stored; gateway.post streams into it like assistant output", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const auto = await h.gateway.channels.create(ANONYMOUS_OWNER, { name: "Nightly", automation: true });
    const created = await c.waitFor((f) => f.type === "channel.created");
    expect(created.payload).toMatchObject({ automation: true, kind: "channel" });
    const refused = await c.request("message.send", { chat_id: auto.chat_id, text: "hi" });
    expect(refused.payload.code).toBe("unsupported");
    const posted = await h.gateway.post(ANONYMOUS_OWNER, auto.chat_id, { text: "Backup finished: 3 GB" });
    expect(posted).toMatchObject({ role: "assistant", text: "Backup finished: 3 GB", status: "complete" });
    const stop = await c.waitFor((f) => f.type === "message.stop" && f.payload.chat_id === auto.chat_id);
    expect(stop.payload.final_text).toBe("Backup finished: 3 GB");
    expect(stop.payload.runtime).toBeDefined();
    const streamed = h.gateway.post(ANONYMOUS_OWNER, auto.chat_id, {
      events: (async function* () {
        yield { type: "text", delta: "part 1, " } as RuntimeEvent;
        await sleep(80);
        yield { type: "text", delta: "part 2" } as RuntimeEvent;
      })(),
    });
    const done = await streamed;
    const last = await c.waitFor((f) => f.type === "message.stop" && f.payload.message_id === done.message_id);
    expect(last.payload.final_text).toBe("part 1, part 2");
    expect(c.of("message.update").length).toBeGreaterThan(0);
    const hist = await c.request("history", { chat_id: auto.chat_id });
    expect(hist.payload.messages.map((m: any) => m.role)).toEqual(["assistant", "assistant"]);
    await expect(
      h.gateway.channels.create(ANONYMOUS_OWNER, {
        name: "bad",
        kind: "thread",
        parent_chat_id: "default",
        automation: true,
      }),
    ).rejects.toMatchObject({ code: "unsupported" });
  });

  it("notifications - gateway.notify reaches every device, is stored, and replays on sync", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const seq = await h.gateway.notify(ANONYMOUS_OWNER, {
      kind: "approval",
      title: "Approve deploy?",
      body: "prod, v2.3",
      ts: 123,
    });
    for (const c of [a, b]) {
      const n = await c.waitFor((f) => f.type === "notification");
      expect(n).toMatchObject({
        seq,
        payload: { kind: "approval", title: "Approve deploy?", body: "prod, v2.3", ts: 123 },
      });
    }
    const later = await Client.connect(h.url);
    await later.request("sync", { cursor: seq - 1 });
    expect(later.of("notification")).toHaveLength(1);
  });
});

describe("commands", () => {
  it("commands - the catalog lists built-ins, the runtime's commands and plugin commands with the five fields", async () => {
    h = await startGateway({
      runtime: {
        ...demoRuntime({ delayMs: 0 }),
        commands: () => [
          {
            name: "/model",
            description: "Switch model",
            args_hint: "<name>",
            category: "Configuration",
            aliases: ["/m"],
          },
        ],
      },
    });
    h.gateway.commands.register(
      { name: "/Weather", description: "Weather now", aliases: ["/w"] },
      ({ args }) => `Sunny in ${args || "Lisbon"}`,
    );
    const c = await Client.connect(h.url);
    const catalog = (await c.request("commands.catalog", {})).payload.commands;
    const names = catalog.map((x: any) => x.name);
    // The runtime's /model takes the name from the built-in that answers model pickers.
    expect(names).toEqual(["/help", "/stop", "/new", "/approve", "/deny", "/answer", "/model", "/weather"]);
    for (const entry of catalog)
      expect(Object.keys(entry).sort()).toEqual(["aliases", "args_hint", "category", "description", "name"]);
    expect(catalog.find((x: any) => x.name === "/weather")).toEqual({
      name: "/weather",
      description: "Weather now",
      args_hint: "",
      category: "Plugin",
      aliases: ["/w"],
    });
    const viaAlias = await c.say({ chat_id: "default", text: "/W Porto" });
    expect(viaAlias.final.payload.final_text).toBe("Sunny in Porto");
    const help = await c.say({ chat_id: "default", text: "/help" });
    expect(help.final.payload.final_text).toContain("/weather");
    const unknown = await c.say({ chat_id: "default", text: "/frobnicate now" });
    expect(unknown.final.payload.final_text).toMatch(/Unknown command \/frobnicate/);
    const model = await c.say({ chat_id: "default", text: "/m big" });
    expect(model.final.payload.final_text).toMatch(/no command handler/);
  });

  it("commands - a runtime or plugin command is never hidden by a built-in: it runs, and the built-in keeps its free names", async () => {
    const warnings: string[] = [];
    const runtime = {
      ...demoRuntime({ delayMs: 0 }),
      commands: () => [
        { name: "/help", description: "The agent's own help", args_hint: "", category: "Info" as const, aliases: [] },
        {
          name: "/reset",
          description: "Reset the agent's memory",
          args_hint: "",
          category: "Session" as const,
          aliases: [],
        },
        { name: "/broken", description: "Bad category", args_hint: "", category: "Misc" as any, aliases: [] },
      ],
      async *command(input: { command: string }) {
        yield { type: "text", delta: `runtime ran ${input.command}` } as RuntimeEvent;
      },
    };
    h = await startGateway({
      runtime,
      logger: { info() {}, error() {}, warn: (message: string) => warnings.push(message) },
    });
    h.gateway.commands.register({ name: "/new", description: "A plugin's fresh start" }, () => "plugin ran /new");
    const c = await Client.connect(h.url);
    const catalog = (await c.request("commands.catalog", {})).payload.commands;
    expect(catalog.map((x: any) => [x.name, x.aliases])).toEqual([
      ["/commands", []],
      ["/stop", ["/cancel"]],
      ["/approve", []],
      ["/deny", []],
      ["/answer", []],
      ["/model", []],
      ["/help", []],
      ["/reset", []],
      ["/new", []],
    ]);
    expect(catalog.find((x: any) => x.name === "/help").description).toBe("The agent's own help");
    expect(warnings.join("\n")).toMatch(/\/broken: category must be one of/);
    expect((await c.say({ chat_id: "default", text: "/help" })).final.payload.final_text).toBe("runtime ran /help");
    expect((await c.say({ chat_id: "default", text: "/reset" })).final.payload.final_text).toBe("runtime ran /reset");
    expect((await c.say({ chat_id: "default", text: "/new" })).final.payload.final_text).toBe("plugin ran /new");
    expect((await c.say({ chat_id: "default", text: "/commands" })).final.payload.final_text).toMatch(
      /^Commands:\n\/commands — List the available commands\n/,
    );
    expect((await c.say({ chat_id: "default", text: "/broken" })).final.payload.final_text).toMatch(
      /Unknown command \/broken/,
    );
  });

  it("commands - a plugin entry that is not a valid catalog entry throws TypeError at registration", async () => {
    h = await startGateway();
    const commands = h.gateway.commands;
    const run = () => "x";
    expect(() => commands.register({ name: "weather", description: "no slash" }, run)).toThrow(TypeError);
    expect(() => commands.register({ name: "weather", description: "no slash" }, run)).toThrow(/leading slash/);
    expect(() => commands.register({ name: "/two words", description: "space" }, run)).toThrow(TypeError);
    expect(() => commands.register({ name: "/", description: "bare slash" }, run)).toThrow(TypeError);
    expect(() => commands.register({ name: "/ok", description: "bad alias", aliases: ["w"] }, run)).toThrow(/alias/);
    expect(() => commands.register({ name: "/ok", description: "bad category", category: "Fun" as any }, run)).toThrow(
      /category must be one of Session, Configuration, Tools & Skills, Info, Exit, Plugin/,
    );
    expect(() => commands.register({ name: "/ok", description: 5 as any }, run)).toThrow(/description/);
    expect(() => commands.register({ name: "/ok", description: "no handler" }, undefined as any)).toThrow(TypeError);
    expect((await commands.catalog()).map((x) => x.name)).toEqual([
      "/help",
      "/stop",
      "/new",
      "/approve",
      "/deny",
      "/answer",
      "/model",
    ]);
    commands.register({ name: "/ok", description: "fine", category: "Tools & Skills" }, run);
    expect((await commands.catalog()).at(-1)).toEqual({
      name: "/ok",
      description: "fine",
      args_hint: "",
      category: "Tools & Skills",
      aliases: [],
    });
  });

  it("commands - slash commands and their replies stay out of the agent's history; /new starts a fresh context", async () => {
    const runtime = scriptedRuntime(async function* (input) {
      yield { type: "text", delta: `re:${input.message.text}` } as RuntimeEvent;
    });
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    await c.say({ chat_id: "default", text: "one" });
    await c.say({ chat_id: "default", text: "/help" });
    await c.say({ chat_id: "default", text: "two" });
    expect(runtime.inputs[1].history.map((m) => m.text)).toEqual(["one", "re:one"]);
    await c.say({ chat_id: "default", text: "/new" });
    await c.say({ chat_id: "default", text: "three" });
    expect(runtime.inputs[2].history).toEqual([]);
  });

  it("commands - /stop with nothing running says so; /stop does not wait behind the running turn", async () => {
    const g = gate();
    h = await startGateway({
      runtime: scriptedRuntime(async function* (input) {
        if (input.message.text === "slow")
          await Promise.race([g.wait, new Promise((r) => input.signal.addEventListener("abort", r))]);
        yield { type: "text", delta: "x" } as RuntimeEvent;
      }),
    });
    const c = await Client.connect(h.url);
    const idle = await c.say({ chat_id: "default", text: "/stop" });
    expect(idle.final.payload.final_text).toBe("Nothing is running here.");
    await c.request("message.send", { chat_id: "default", text: "slow" });
    await c.waitFor((f) => f.type === "message.start" && c.of("message.start").length === 2);
    await c.request("message.send", { chat_id: "default", text: "/cancel" });
    const stopped = await c.waitFor((f) => f.type === "message.stop" && f.payload.status === "stopped");
    expect(stopped.payload.final_text).toBe("(stopped)");
    g.release();
  });
});

describe("message.delete", () => {
  it("message.delete - answers, broadcasts, stores, and the messages are gone from history and search", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const { echo, final } = await a.say({ chat_id: "default", text: "forget this walrus" });
    await a.say({ chat_id: "default", text: "keep this" });
    const ids = [echo.payload.message_id, final.payload.message_id];
    const answer = await a.request("message.delete", { chat_id: "default", message_ids: ids });
    expect(answer).toMatchObject({
      type: "message.deleted",
      payload: { chat_id: "default", thread_id: null, message_ids: ids },
    });
    expect(answer.seq).toBeGreaterThan(0);
    const seen = await b.waitFor((f) => f.type === "message.deleted");
    expect(seen.id).toBeUndefined();
    const hist = (await a.request("history", { chat_id: "default" })).payload.messages.map((m: any) => m.message_id);
    expect(hist).not.toContain(ids[0]);
    expect(hist).toHaveLength(2);
    expect((await a.request("search", { query: "walrus", scope: "all" })).payload.hits).toEqual([]);
    const offline = await Client.connect(h.url);
    await offline.request("sync", { cursor: answer.seq! - 1 });
    expect(offline.of("message.deleted")).toHaveLength(1);
  });

  it("message.delete - an id not in that lane is not_found and nothing is deleted", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const th = (await a.request("channel.create", { name: "T", kind: "thread", parent_chat_id: "default" })).payload
      .chat_id;
    const inThread = (await a.say({ chat_id: th, text: "in thread" })).echo.payload.message_id;
    const flat = (await a.say({ chat_id: "default", text: "flat" })).echo.payload.message_id;
    const answer = await a.request("message.delete", { chat_id: "default", message_ids: [flat, inThread] });
    expect(answer.payload.code).toBe("not_found");
    expect(
      (await a.request("history", { chat_id: "default" })).payload.messages.map((m: any) => m.message_id),
    ).toContain(flat);
  });
});

describe("push", () => {
  it("push - a final answer and a notification for an owner with no connected device go to each device with a target", async () => {
    const received: Array<{ url: string; title: string; body: string }> = [];
    let failFirst = true;
    const ntfy = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        if (failFirst) {
          failFirst = false;
          res.writeHead(503).end();
          return;
        }
        received.push({ url: req.url!, title: String(req.headers.title), body });
        res.writeHead(200).end("{}");
      });
    });
    await new Promise<void>((r) => ntfy.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(ntfy.address() as AddressInfo).port}`;
    try {
      const later = gate();
      h = await startGateway({
        push: [ntfyPushSender({ baseUrl: base })],
        pushRetry: { attempts: 3, backoffMs: 20 },
        runtime: scriptedRuntime(async function* (input) {
          if (input.message.text === "answer me later") await later.wait;
          yield { type: "text", delta: `You said: ${input.message.text}` } as RuntimeEvent;
        }),
      });
      const phone = await Client.connect(h.url, {
        device_id: "phone",
        ntfy_topic: "ann-phone",
        caps: { push: "ntfy" },
      });
      await Client.connect(h.url, { device_id: "laptop" }).then((c) => c.close());
      // connected: no push
      await phone.say({ chat_id: "default", text: "while here" });
      await sleep(100);
      expect(received).toEqual([]);
      await phone.request("message.send", { chat_id: "default", text: "answer me later" });
      await phone.close();
      await sleep(50);
      later.release();
      await sleep(300);
      await h.gateway.notify(ANONYMOUS_OWNER, { kind: "cron", title: "Daily digest", body: "3 new items" });
      await sleep(300);
      expect(received.map((r) => r.url)).toEqual(["/ann-phone", "/ann-phone"]);
      expect(received[0].body).toContain("You said: answer me later");
      expect(received[1]).toMatchObject({ title: "Daily digest", body: "3 new items" });
    } finally {
      await new Promise((r) => ntfy.close(r));
    }
  });

  it("push - caps.push is honoured: a device that declares none, or a channel it has no target for, gets no push", async () => {
    const ntfy = await recordingServer();
    try {
      h = await startGateway({
        push: [ntfyPushSender({ baseUrl: ntfy.url })],
        pushRetry: { attempts: 0, backoffMs: 1 },
      });
      await Client.connect(h.url, {
        device_id: "quiet",
        ntfy_topic: "quiet-topic",
        fcm_token: "quiet-token",
        caps: { push: "none" },
      }).then((c) => c.close());
      await Client.connect(h.url, { device_id: "undeclared", ntfy_topic: "undeclared-topic" }).then((c) => c.close());
      await Client.connect(h.url, { device_id: "fcm-only", ntfy_topic: "fcm-only-topic", caps: { push: "fcm" } }).then(
        (c) => c.close(),
      );
      await Client.connect(h.url, { device_id: "loud", ntfy_topic: "loud-topic", caps: { push: "ntfy" } }).then((c) =>
        c.close(),
      );
      await sleep(50);
      await h.gateway.notify(ANONYMOUS_OWNER, { kind: "cron", title: "Digest", body: "2 items" });
      await h.gateway.post(ANONYMOUS_OWNER, "default", { text: "posted while away" });
      const deadline = Date.now() + 2000;
      while (ntfy.requests.length < 2 && Date.now() < deadline) await sleep(20);
      await sleep(100);
      expect(ntfy.requests.map((r) => r.url)).toEqual(["/loud-topic", "/loud-topic"]);
    } finally {
      await ntfy.close();
    }
  });
});
