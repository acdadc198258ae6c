// A real binding behind a real gateway: what a phone sees when the model streams, calls a tool
// that throws, fails mid-stream, or is stopped.
import { afterEach, describe, expect, it } from "vitest";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { MockLanguageModelV3 } from "ai/test";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { chunk, json, sse, startFakeLlmServer, stream, type FakeLlmServer } from "./fake-llm-server.js";

let h: Harness | undefined;
let llm: FakeLlmServer | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  h = undefined;
  llm = undefined;
});

const usage = (prompt: number, completion: number) => ({
  id: "c",
  object: "chat.completion.chunk",
  created: 1,
  model: "openai/gpt-4o-mini",
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

describe("openai-compatible over the wire", () => {
  it("over the wire - reasoning, a tool that throws (ok false), the turn goes on, footer from usage", async () => {
    llm = await startFakeLlmServer();
    llm.respond(
      stream(
        sse([
          chunk({ role: "assistant", reasoning_content: "I should look it up. " }),
          chunk({
            tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "lookup", arguments: "" } }],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Lisbon"}' } }] }, {}, "tool_calls"),
          usage(100, 10),
        ]),
      ),
      stream(
        sse([
          chunk({ content: "The lookup failed, " }),
          chunk({ content: "but Lisbon is sunny." }, {}, "stop"),
          usage(150, 12),
        ]),
        { pieceBytes: 7, delayMs: 5 },
      ),
    );
    const runtime = openAICompatibleRuntime({
      baseUrl: llm.baseUrl,
      model: "openai/gpt-4o-mini",
      contextWindow: 1000,
      tools: {
        lookup: {
          description: "Look up weather",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          execute: async () => {
            throw new Error("weather service down");
          },
        },
      },
    });
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "weather?" });
    const start = c.of("tool.start")[0];
    const end = c.of("tool.end")[0];
    expect(start.payload).toMatchObject({ index: 0, name: "lookup", args: { city: "Lisbon" } });
    expect(end.payload).toMatchObject({ index: 0, name: "lookup", ok: false });
    expect(JSON.stringify(end.payload.output)).toContain("weather service down");
    expect(final.payload).toMatchObject({
      status: "complete",
      reasoning: "I should look it up. ",
      model: "gpt-4o-mini",
      tokens: 272,
    });
    expect(final.payload.final_text).toContain("but Lisbon is sunny.");
    expect(final.payload.runtime).toMatchObject({ model: "gpt-4o-mini", context_pct: 15 });
    // the model got the tool's error as the tool result
    expect(JSON.stringify(llm.requests[1].body.messages)).toContain("weather service down");
  });

  it("over the wire - an HTTP 429 ends the turn with a clear message, the runtime object and typing off", async () => {
    llm = await startFakeLlmServer();
    llm.respond(json(429, { error: { message: "slow down" } }, { "retry-after": "20" }));
    h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }) });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "hi" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(/rate limited.*20 s/i);
    expect(final.payload.runtime).toHaveProperty("latency");
    expect(c.of("typing").at(-1)!.payload.on).toBe(false);
  });

  it("over the wire - a connection dropped mid-stream keeps what arrived and says so", async () => {
    llm = await startFakeLlmServer();
    llm.respond(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse([chunk({ content: "Half of it" })], { done: false }));
      setTimeout(() => res.socket?.destroy(), 30);
    });
    h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }) });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "hi" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text.startsWith("Half of it")).toBe(true);
  });

  it("over the wire - /stop aborts the model request", async () => {
    llm = await startFakeLlmServer();
    llm.respond(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse([chunk({ content: "Thinking for a long time" })], { done: false }));
    });
    h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }) });
    const c = await Client.connect(h.url);
    await c.request("message.send", { chat_id: "default", text: "long" });
    await c.waitFor((f) => f.type === "message.update");
    await c.request("message.send", { chat_id: "default", text: "/stop" });
    const stop = await c.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({ status: "stopped", final_text: "Thinking for a long time" });
    await llm.requests[0].closedEarly;
  });
});

// The provider-level stream part, taken from the mock so the test needs no import from @ai-sdk/provider.
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;

/** A provider stream that never finishes: a text delta per pull, every `everyMs` (or task), until its signal aborts. */
function endlessModel(delta: string, everyMs = 0) {
  const seen = { signal: undefined as AbortSignal | undefined };
  const model = new MockLanguageModelV3({
    doStream: async ({ abortSignal }) => {
      seen.signal = abortSignal;
      let first = true;
      const stream = new ReadableStream<StreamPart>({
        async pull(controller) {
          if (first) {
            first = false;
            controller.enqueue({ type: "stream-start", warnings: [] } as StreamPart);
            controller.enqueue({ type: "text-start", id: "t" } as StreamPart);
          }
          // As a network would, each delta arrives in a later task: the AI SDK reads its provider eagerly.
          await new Promise((resolve) => (everyMs > 0 ? setTimeout(resolve, everyMs) : setImmediate(resolve)));
          // What a provider's fetch does when its signal aborts: the stream fails.
          if (abortSignal?.aborted) {
            controller.error(abortSignal.reason);
            return;
          }
          controller.enqueue({ type: "text-delta", id: "t", delta } as StreamPart);
        },
      });
      return { stream };
    },
  });
  return { model, seen };
}

describe("ai-sdk over the wire - the gateway's limits apply to it as they are", () => {
  it("over the wire - an AI SDK model that never stops talking is cut at maxAnswerChars and its request aborted", async () => {
    const { model, seen } = endlessModel("y".repeat(1000));
    h = await startGateway({ runtime: aiSdkRuntime({ model }), maxAnswerChars: 20_000 });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "go on" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toBe(
      `${"y".repeat(20_000)}\n\nThe answer was cut off at the gateway's limit of 20,000 characters.`,
    );
    expect(seen.signal?.aborted).toBe(true);
  });

  it("over the wire - an AI SDK model that streams forever is stopped at maxTurnMs", async () => {
    const { model, seen } = endlessModel("z", 10);
    h = await startGateway({ runtime: aiSdkRuntime({ model }), maxTurnMs: 400 });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "go on" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(
      /^z+\n\nThe agent was stopped: the turn ran past the gateway's limit of 400 ms\.$/,
    );
    expect(seen.signal?.aborted).toBe(true);
  });
});
