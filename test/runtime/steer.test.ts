// `when_busy: "steer"` in both runtime bindings (docs/PROTOCOL.md §14.4), through the wire, against
// a loopback OpenAI-compatible model server: the steered text reaches the running turn's next model
// request as a user message; when the turn would have made no further request, it makes one for it.
import { afterEach, describe, expect, it } from "vitest";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { jsonSchema, tool } from "ai";
import type { AgentRuntime } from "chat-gateway";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { chunk, sse, startFakeLlmServer, stream, type FakeLlmServer } from "./fake-llm-server.js";

let harness: Harness | undefined;
let llm: FakeLlmServer | undefined;
afterEach(async () => {
  await harness?.close();
  await llm?.close();
  harness = llm = undefined;
});

const usage = { ...chunk({}), choices: [], usage: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 } };
const waitCall = sse([
  chunk({
    role: "assistant",
    content: null,
    tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "wait", arguments: "" } }],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }),
  chunk({}, {}, "tool_calls"),
  usage,
]);
const answer = (text: string) =>
  sse([
    chunk({ role: "assistant", content: "" }),
    ...text.split(/(?<= )/).map((w) => chunk({ content: w })),
    chunk({}, {}, "stop"),
    usage,
  ]);

/** The tool `wait` returns once the test lets it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    open,
    execute: async () => {
      await opened;
      return "waited";
    },
  };
}

type Binding = (baseUrl: string, execute: () => Promise<string>) => AgentRuntime;
const parameters = { type: "object", properties: {} };
const BINDINGS: Record<string, Binding> = {
  "openai-compatible": (baseUrl, execute) =>
    openAICompatibleRuntime({
      baseUrl,
      model: "gpt-4o-mini",
      generateTitle: false,
      tools: { wait: { parameters, execute } },
    }),
  "ai-sdk": (baseUrl, execute) =>
    aiSdkRuntime({
      model: createOpenAICompatible({ name: "loopback", baseURL: baseUrl, includeUsage: true }).chatModel(
        "gpt-4o-mini",
      ),
      generateTitle: false,
      streamTextOptions: { maxRetries: 0 },
      tools: {
        wait: tool({
          description: "waits",
          inputSchema: jsonSchema<Record<string, never>>(parameters as never),
          execute,
        }),
      },
    }),
};

/** The text of a request message, whichever shape the binding sent. */
function textOf(message: { content: unknown }): string {
  const c = message.content;
  return typeof c === "string" ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? "").join("") : "";
}

async function setUp(binding: Binding) {
  llm = await startFakeLlmServer();
  const wait = gate();
  harness = await startGateway({ runtime: binding(llm.baseUrl, wait.execute) });
  return { llm, wait, device: await Client.connect(harness.url) };
}

describe.each(Object.keys(BINDINGS))("steer - %s", (name) => {
  it("steer - between tool steps: the text reaches the next model request as a user message, and gets no answer of its own", async () => {
    const { llm, wait, device } = await setUp(BINDINGS[name]);
    llm.respond(stream(waitCall), stream(answer("Noted, cats too.")));
    const first = await device.request("message.send", { chat_id: "default", text: "start" });
    await device.waitFor((f) => f.type === "tool.start", 10_000);
    const steered = await device.request("message.send", {
      chat_id: "default",
      text: "mention cats",
      when_busy: "steer",
    });
    expect(steered.type).toBe("message");
    wait.open();
    const stop = await device.waitFor((f) => f.type === "message.stop", 10_000);
    expect(stop.payload).toMatchObject({
      reply_to: first.payload.message_id,
      status: "complete",
      final_text: "Noted, cats too.",
    });
    expect(llm.requests).toHaveLength(2);
    const sent = llm.requests[1].body.messages as Array<{ role: string; content: unknown }>;
    expect(sent.map((m) => m.role).slice(-3)).toEqual(["assistant", "tool", "user"]);
    expect(textOf(sent.at(-1)!)).toBe("mention cats");
    expect(llm.requests[0].body.messages.some((m: { content: unknown }) => textOf(m as never) === "mention cats")).toBe(
      false,
    );
    // It never waited in the queue, and no second answer comes.
    const history = await device.request("history", { chat_id: "default" });
    expect(history.payload.messages.map((m: { role: string; text: string }) => [m.role, m.text])).toEqual([
      ["user", "start"],
      ["assistant", "Noted, cats too."],
      ["user", "mention cats"],
    ]);
    expect(device.frames.filter((f) => f.type === "lane.queue" && f.payload.message_ids.length > 0)).toEqual([]);
  });

  it("steer - during the last model call: the turn makes one more request for it, after the answer so far", async () => {
    const { llm, device } = await setUp(BINDINGS[name]);
    llm.respond(
      stream(answer("Hello there, my good friend."), { pieceBytes: 100, delayMs: 100 }),
      stream(answer("And about cats: yes.")),
    );
    await device.request("message.send", { chat_id: "default", text: "hi" });
    await device.waitFor((f) => f.type === "message.update", 10_000);
    const steered = await device.request("message.send", {
      chat_id: "default",
      text: "mention cats",
      when_busy: "steer",
    });
    expect(steered.type).toBe("message");
    const stop = await device.waitFor((f) => f.type === "message.stop", 20_000);
    expect(stop.payload.final_text).toBe("Hello there, my good friend.\n\nAnd about cats: yes.");
    expect(llm.requests).toHaveLength(2);
    const sent = (llm.requests[1].body.messages as Array<{ role: string; content: unknown }>).slice(-3);
    expect(sent.map((m) => [m.role, textOf(m)])).toEqual([
      ["user", "hi"],
      ["assistant", "Hello there, my good friend."],
      ["user", "mention cats"],
    ]);
    expect(device.frames.filter((f) => f.type === "message.stop")).toHaveLength(1);
  });
});
