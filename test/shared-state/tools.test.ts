// Tool calls belong to the message (docs/PROTOCOL.md §14): an answer keeps its tool calls in call
// order on message.stop, in history and after a restart, each argument and output cut at 16 KiB
// with `truncated`, all of them together within 256 KiB (a turn whose calls no longer fit is
// stopped); a tool running when the turn ends is kept with ok false and output null; and the
// next turn's runtime, through the OpenAI-compatible binding, sends them to the model server as its
// own tool calls and results.
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRuntime, HistoryItem, TurnInput } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { Client, startGateway, type Frame, type Harness } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";
import { sse, startFakeLlmServer, stream, type FakeLlmServer } from "../runtime/fake-llm-server.js";

let harness: Harness | undefined;
let llm: FakeLlmServer | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await llm?.close();
  llm = undefined;
  await removeTempDirs();
});

const big = "x".repeat(20_000);
const seen: TurnInput[] = [];

/** First turn: three tools (one with huge arguments and output, one left running); later turns: text. */
const toolRuntime: AgentRuntime = {
  async *turn(input) {
    seen.push(input);
    if (input.message.text !== "use tools") {
      yield { type: "text", delta: "plain" };
      return;
    }
    yield { type: "tool-start", id: "a", name: "search", args: { q: "cats" } };
    yield { type: "tool-end", id: "a", output: { hits: 2 }, ok: true, duration: 0.5 };
    yield { type: "tool-start", id: "b", name: "write", args: { body: big } };
    yield { type: "tool-end", id: "b", output: `é${big}`, ok: false, duration: 1 };
    yield { type: "tool-start", id: "c", name: "slow", args: {} };
    yield { type: "text", delta: "done" };
  },
};

const TOOLS_BYTES = 256 * 1024;
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8");

/** A runtime whose answer makes `calls` calls, each with 20 KB of arguments and of output, then says "done". */
const manyCalls = (calls: number) =>
  scriptedRuntime(async function* () {
    for (let i = 0; i < calls; i++) {
      yield { type: "tool-start", id: `c${i}`, name: `tool${i}`, args: { body: big } };
      yield { type: "tool-end", id: `c${i}`, output: big, ok: i % 2 === 0, duration: 0.25 };
    }
    yield { type: "text", delta: "done" };
  });

/** The stored final frame of an answer, as `sync` from 0 replays it to a new device. */
async function replayed(url: string, messageId: string): Promise<Frame> {
  const device = await Client.connect(url);
  await device.request("sync", { cursor: 0 });
  const stop = device.of("message.stop").find((f) => f.payload.message_id === messageId);
  if (!stop) throw new Error(`no stored message.stop for ${messageId}`);
  return stop;
}

describe("tool calls kept on the answer", () => {
  it("tools - kept on message.stop, in history and after a restart, cut at 16 KiB; the next turn's runtime sees them", async () => {
    const dir = await tempDir();
    harness = await startGateway({ storage: sqlJsStorage({ dir }), runtime: toolRuntime });
    const device = await Client.connect(harness.url);
    const { final } = await device.say({ chat_id: "default", text: "use tools" });
    const tools = final.payload.tools as Array<Record<string, any>>;
    expect(tools.map((t) => [t.index, t.name, t.ok])).toEqual([
      [0, "search", true],
      [1, "write", false],
      [2, "slow", false],
    ]);
    expect(tools[0]).toEqual({
      index: 0,
      name: "search",
      preview: '{"q":"cats"}',
      args: { q: "cats" },
      output: { hits: 2 },
      ok: true,
      duration: 0.5,
    });
    expect(tools[1].truncated).toBe(true);
    expect(typeof tools[1].args).toBe("string");
    expect(Buffer.byteLength(tools[1].args)).toBeLessThanOrEqual(16 * 1024);
    expect(tools[1].args.startsWith('{"body":"xxx')).toBe(true);
    expect(Buffer.byteLength(tools[1].output)).toBeLessThanOrEqual(16 * 1024);
    expect(tools[1].output.startsWith("éxx")).toBe(true);
    expect(tools[2]).toMatchObject({ output: null, ok: false });
    expect(tools[0].truncated).toBeUndefined();

    await harness.close();
    harness = await startGateway({ storage: sqlJsStorage({ dir }), runtime: toolRuntime });
    const again = await Client.connect(harness.url);
    const page = await again.request("history", { chat_id: "default", limit: 10 });
    const answer = (page.payload.messages as HistoryItem[]).find((m) => m.role === "assistant")!;
    expect(answer.tools).toEqual(tools);
    await again.say({ chat_id: "default", text: "and now?" });
    const last = seen.at(-1)!;
    expect(last.history.find((h) => h.role === "assistant")?.tools).toEqual(tools);
  });

  it("tools - live tool.start and tool.end carry the call as stored: 16 KiB per field, cut arguments as truncated_arguments, name and preview bounded", async () => {
    const huge = "y".repeat(2_000_000);
    const runtime = scriptedRuntime(async function* () {
      yield { type: "tool-start", id: "h", name: `n${"a".repeat(5_000)}`, preview: "p".repeat(5_000), args: { huge } };
      yield { type: "tool-end", id: "h", output: huge, ok: true, duration: 1 };
      yield { type: "text", delta: "done" };
    });
    harness = await startGateway({ runtime });
    const device = await Client.connect(harness.url);
    const { final } = await device.say({ chat_id: "default", text: "use tools" });
    const start = device.of("tool.start")[0]!;
    const end = device.of("tool.end")[0]!;
    // A model's two megabytes reach no device: each live frame stays near the stored entry's size.
    expect(jsonBytes(start)).toBeLessThan(20 * 1024);
    expect(jsonBytes(end)).toBeLessThan(20 * 1024);
    const stored = (final.payload.tools as Array<Record<string, any>>)[0]!;
    expect(start.payload.args).toEqual({ truncated_arguments: stored.args });
    expect(end.payload.output).toBe(stored.output);
    expect(start.payload.name).toHaveLength(128);
    expect(start.payload.name).toBe(stored.name);
    expect(start.payload.preview).toHaveLength(120);
    expect(end.payload.name).toBe(stored.name);
  });

  it("tools - an answer's calls together stay within 256 KiB: later arguments and outputs are cut, every call keeps its name and outcome", async () => {
    harness = await startGateway({ runtime: manyCalls(40) });
    const device = await Client.connect(harness.url);
    const { final } = await device.say({ chat_id: "default", text: "use tools" });
    expect(final.payload).toMatchObject({ status: "complete", final_text: "done" });
    const tools = final.payload.tools as Array<Record<string, any>>;
    expect(jsonBytes(tools)).toBeLessThanOrEqual(TOOLS_BYTES);
    expect(jsonBytes(final)).toBeLessThan(TOOLS_BYTES + 2048);
    expect(tools.map((t) => [t.index, t.name, t.ok, t.duration])).toEqual(
      Array.from({ length: 40 }, (_, i) => [i, `tool${i}`, i % 2 === 0, 0.25]),
    );
    // The first calls keep their 16 KiB; the last ones are kept without their fields, marked cut.
    expect(Buffer.byteLength(tools[0].args)).toBeGreaterThan(16_000);
    expect(tools[0].output.startsWith("xxx")).toBe(true);
    expect(tools.at(-1)).toMatchObject({ args: "", output: "", truncated: true });
    expect(tools.every((t) => t.truncated === true)).toBe(true);
    expect((await replayed(harness.url, final.payload.message_id)).payload.tools).toEqual(tools);
  });

  it("tools - a turn whose calls no longer fit in 256 KiB is stopped and says why; live, stored and replayed frames agree", async () => {
    harness = await startGateway({ runtime: manyCalls(1_200) });
    const device = await Client.connect(harness.url);
    const { final } = await device.say({ chat_id: "default", text: "use tools" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toBe(
      "The agent was stopped: its tool calls passed the gateway's limit of 256 KiB.",
    );
    const tools = final.payload.tools as Array<Record<string, any>>;
    expect(jsonBytes(tools)).toBeLessThanOrEqual(TOOLS_BYTES);
    expect(jsonBytes(final)).toBeLessThan(TOOLS_BYTES + 2048);
    expect(tools.length).toBeGreaterThan(200);
    expect(tools.map((t) => t.name)).toEqual(tools.map((_, i) => `tool${i}`));
    // A call that does not fit is not shown live either: devices see the calls the answer keeps.
    const shown = device.of("tool.start").filter((f) => f.payload.message_id === final.payload.message_id);
    expect(shown).toHaveLength(tools.length);
    const stored = await replayed(harness.url, final.payload.message_id);
    expect(jsonBytes(stored)).toBeLessThan(TOOLS_BYTES + 2048);
    expect(stored.payload.tools).toEqual(tools);
  });

  it("tools - the OpenAI-compatible binding sends earlier tool calls and results as the model's own messages", async () => {
    llm = await startFakeLlmServer();
    llm.respond(
      stream(
        sse([
          {
            id: "x",
            object: "chat.completion.chunk",
            created: 1,
            model: "m",
            choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }],
          },
        ]),
      ),
    );
    const runtime = openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" });
    const history: HistoryItem[] = [
      { message_id: "u1", role: "user", text: "find cats", reasoning: "", ts: 1, media: [] },
      {
        message_id: "a1",
        role: "assistant",
        text: "Found 2.",
        reasoning: "",
        ts: 2,
        media: [],
        tools: [
          { index: 0, name: "search", preview: "", args: { q: "cats" }, output: { hits: 2 }, ok: true, duration: 0.1 },
          {
            index: 1,
            name: "write",
            preview: "",
            args: '{"body":"xx',
            output: null,
            ok: false,
            duration: 0,
            truncated: true,
          },
        ],
      },
    ];
    for await (const _ of runtime.turn({
      owner: "o",
      chat_id: "c",
      thread_id: null,
      message: { message_id: "u2", text: "more", media: [] },
      history,
      signal: new AbortController().signal,
      readMedia: async () => new Uint8Array(),
      ask: async () => ({ outcome: "cancelled" }),
    })) {
      // drain
    }
    const messages = llm.requests[0].body.messages;
    expect(messages).toEqual([
      { role: "user", content: "find cats" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a1_0", type: "function", function: { name: "search", arguments: '{"q":"cats"}' } },
          {
            id: "call_a1_1",
            type: "function",
            function: { name: "write", arguments: '{"truncated_arguments":"{\\"body\\":\\"xx"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_a1_0", content: '{"hits":2}' },
      { role: "tool", tool_call_id: "call_a1_1", content: "(the tool did not finish)" },
      { role: "assistant", content: "Found 2." },
      { role: "user", content: "more" },
    ]);
  });
});
