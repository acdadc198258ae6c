import { describe, expect, it, vi } from "vitest";
import { APICallError, tool } from "ai5";
import { MockLanguageModelV2, simulateReadableStream } from "ai5/test";
import { z } from "zod";
import { isGatewayError } from "chat-gateway/protocol";
import type { AiSdkRuntimeOptions } from "chat-gateway/runtime/ai-sdk";
import { collect, input } from "./turn-helpers.js";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";

// The binding imports "ai"; in this file that is ai 5 (installed as the alias ai5), so the same
// binding runs against the older major; ai-sdk.test.ts runs it against ai 6. streamText is wrapped
// in a spy only to prove that the binding called ai 5's.
vi.mock("ai", async () => {
  const ai5 = await import("ai5");
  return { ...ai5, streamText: vi.fn(ai5.streamText) };
});

// The provider-level stream part, taken from the mock so the test needs no import from @ai-sdk/provider.
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV2["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;

// ai 5's tool() types differ from ai 6's, which the binding's options are typed with.
const tools = (set: Record<string, unknown>) => set as AiSdkRuntimeOptions["tools"];

// Version 2 of the provider spec: a flat usage and a plain finish reason.
const usage = (input: number, output: number) => ({
  inputTokens: input,
  outputTokens: output,
  totalTokens: input + output,
});

function step(parts: unknown[], finish: "stop" | "tool-calls" = "stop", tokens: [number, number] = [10, 5]) {
  const chunks = [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "r1", modelId: "mock-model-2025", timestamp: new Date(0) },
    ...parts,
    { type: "finish", finishReason: finish, usage: usage(...tokens) },
  ];
  return { stream: simulateReadableStream<StreamPart>({ chunks: chunks as StreamPart[] }) };
}

const text = (id: string, ...deltas: string[]) => [
  { type: "text-start", id },
  ...deltas.map((delta) => ({ type: "text-delta", id, delta })),
  { type: "text-end", id },
];

const addTool = tool({
  description: "Adds two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => ({ sum: a + b }),
});

describe("ai-sdk on ai 5 - streaming", () => {
  it("runs on ai 5, not on the installed ai 6", async () => {
    const { streamText } = await import("ai");
    vi.mocked(streamText).mockClear();
    const model = new MockLanguageModelV2({ doStream: step(text("t", "Hi")) });
    expect((await collect(aiSdkRuntime({ model }).turn(input("x")))).text).toBe("Hi");
    expect(streamText).toHaveBeenCalledTimes(1);
  });

  it("streams text and reasoning and reports usage with the model id", async () => {
    const model = new MockLanguageModelV2({
      doStream: step([
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "Let me " },
        { type: "reasoning-delta", id: "r", delta: "think." },
        { type: "reasoning-end", id: "r" },
        ...text("t", "Hello", ", world"),
      ]),
    });
    const runtime = aiSdkRuntime({
      model,
      system: "Be brief.",
      contextWindow: 32_000,
      prices: { input: 1, output: 2 },
    });
    const history = [
      { message_id: "m1", role: "user" as const, text: "Hi", reasoning: "", ts: 1, media: [] },
      { message_id: "m2", role: "assistant" as const, text: "Hello!", reasoning: "", ts: 2, media: [] },
    ];
    const result = await collect(runtime.turn(input("Greet me", { history })));
    expect(result.error).toBeUndefined();
    expect(result.reasoning).toBe("Let me think.");
    expect(result.text).toBe("Hello, world");
    expect(result.usage).toEqual({
      type: "usage",
      model: "mock-model-2025",
      promptTokens: 10,
      completionTokens: 5,
      totalTokens: 15,
      contextWindow: 32_000,
      cost: (10 * 1 + 5 * 2) / 1e6,
    });
    const prompt = model.doStreamCalls[0].prompt;
    expect(prompt.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(prompt.at(-1)).toMatchObject({ role: "user", content: [{ type: "text", text: "Greet me" }] });
  });

  it("runs a tool call through the AI SDK and reports its start and end", async () => {
    const model = new MockLanguageModelV2({
      doStream: [
        step(
          [{ type: "tool-call", toolCallId: "call-1", toolName: "add", input: '{"a":2,"b":3}' }],
          "tool-calls",
          [20, 8],
        ),
        step(text("t", "It is 5."), "stop", [40, 4]),
      ],
    });
    const result = await collect(aiSdkRuntime({ model, tools: tools({ add: addTool }) }).turn(input("2+3?")));
    expect(result.error).toBeUndefined();
    expect(result.text).toBe("It is 5.");
    const start = result.events.find((e) => e.type === "tool-start");
    const end = result.events.find((e) => e.type === "tool-end");
    expect(start).toEqual({
      type: "tool-start",
      id: "call-1",
      name: "add",
      args: { a: 2, b: 3 },
      preview: "add(a=2, b=3)",
    });
    expect(end).toMatchObject({ type: "tool-end", id: "call-1", name: "add", output: { sum: 5 }, ok: true });
    expect((end as { duration: number }).duration).toBeGreaterThanOrEqual(0);
    expect(result.usage).toMatchObject({ promptTokens: 40, completionTokens: 12, totalTokens: 72 });
    // The second call carries the tool result back to the model.
    expect(JSON.stringify(model.doStreamCalls[1].prompt)).toContain('"sum":5');
  });

  it.each([
    ["approved", "approve", true],
    ["denied", "deny", false],
  ])(
    "the needsApproval option asks before a call; %s, the tool runs or the model is told",
    async (_label, option, runs) => {
      const model = new MockLanguageModelV2({
        doStream: [
          step([{ type: "tool-call", toolCallId: "call-1", toolName: "add", input: '{"a":2,"b":3}' }], "tool-calls"),
          step(text("t", "Ok.")),
        ],
      });
      const asked: unknown[] = [];
      const ask = async (request: unknown) => {
        asked.push(request);
        return { outcome: "selected" as const, option_id: option };
      };
      const result = await collect(
        aiSdkRuntime({ model, tools: tools({ add: addTool }), needsApproval: ["add"] }).turn(input("2+3?", { ask })),
      );
      expect(asked).toEqual([
        { kind: "approval", title: "Run add?", body: "add(a=2, b=3)", tool: { name: "add", args: { a: 2, b: 3 } } },
      ]);
      const end = result.events.find((e) => e.type === "tool-end");
      const prompt = JSON.stringify(model.doStreamCalls[1].prompt);
      if (runs) {
        expect(end).toMatchObject({ ok: true, output: { sum: 5 } });
        expect(prompt).toContain('"sum":5');
      } else {
        expect(end).toMatchObject({ ok: false, output: "The person denied this tool call; it was not run." });
        expect(prompt).toContain("The person denied this tool call");
      }
      expect(result.text).toBe("Ok.");
    },
  );

  it("separates text written before a tool call from the text after it", async () => {
    const model = new MockLanguageModelV2({
      doStream: [
        step(
          [
            ...text("a", "Let me check."),
            { type: "tool-call", toolCallId: "c1", toolName: "add", input: '{"a":1,"b":2}' },
          ],
          "tool-calls",
        ),
        step(text("b", "It is ", "3.")),
      ],
    });
    const result = await collect(aiSdkRuntime({ model, tools: tools({ add: addTool }) }).turn(input("1+2")));
    expect(result.text).toBe("Let me check.\n\nIt is 3.");
  });

  it("reports a throwing tool as failed and the turn goes on", async () => {
    const model = new MockLanguageModelV2({
      doStream: [
        step([{ type: "tool-call", toolCallId: "call-9", toolName: "explode", input: "{}" }], "tool-calls"),
        step(text("t", "That tool failed.")),
      ],
    });
    const explode = tool({
      description: "Always fails",
      inputSchema: z.object({}),
      execute: async (): Promise<string> => {
        throw new Error("disk full");
      },
    });
    const result = await collect(aiSdkRuntime({ model, tools: tools({ explode }) }).turn(input("go")));
    expect(result.error).toBeUndefined();
    expect(result.events.find((e) => e.type === "tool-end")).toMatchObject({
      id: "call-9",
      name: "explode",
      ok: false,
      output: "disk full",
    });
    expect(result.text).toBe("That tool failed.");
    expect(JSON.stringify(model.doStreamCalls[1].prompt)).toContain("disk full");
  });

  it("honours maxSteps", async () => {
    const again = () =>
      step(
        [{ type: "tool-call", toolCallId: `c${Math.random()}`, toolName: "add", input: '{"a":1,"b":1}' }],
        "tool-calls",
      );
    const model = new MockLanguageModelV2({ doStream: [again(), again(), again()] });
    const { events } = await collect(
      aiSdkRuntime({ model, tools: tools({ add: addTool }), maxSteps: 2 }).turn(input("loop")),
    );
    expect(model.doStreamCalls).toHaveLength(2);
    expect(events.at(-1)).toEqual({
      type: "commentary",
      text: "Stopped at the step limit: the model still wanted to call tools.",
    });
  });

  it("ends the turn with a clear error on an error part, after the text so far", async () => {
    const model = new MockLanguageModelV2({
      doStream: {
        stream: simulateReadableStream<StreamPart>({
          chunks: [...text("t", "partial"), { type: "error", error: new Error("overloaded") }] as StreamPart[],
        }),
      },
    });
    const result = await collect(aiSdkRuntime({ model }).turn(input("x")));
    expect(result.text).toBe("partial");
    expect(isGatewayError(result.error)).toBe(true);
    expect((result.error as Error).message).toBe("The model failed: overloaded");
  });

  it("maps a provider's HTTP 429 to a rate-limit error with the retry delay", async () => {
    const model = new MockLanguageModelV2({
      doStream: async () => {
        throw new APICallError({
          message: "Too Many Requests",
          url: "http://127.0.0.1/v1",
          requestBodyValues: {},
          statusCode: 429,
          responseHeaders: { "retry-after": "20" },
          isRetryable: true,
        });
      },
    });
    const result = await collect(aiSdkRuntime({ model, streamTextOptions: { maxRetries: 0 } }).turn(input("x")));
    expect((result.error as Error).message).toBe(
      "Rate limited by the model provider; retry after 20 s: Too Many Requests",
    );
    expect((result.error as { code: string }).code).toBe("rate_limited");
  });

  it("stops promptly and quietly when the signal aborts", async () => {
    const controller = new AbortController();
    let modelSignal: AbortSignal | undefined;
    const model = new MockLanguageModelV2({
      doStream: async (options) => {
        modelSignal = options.abortSignal;
        return {
          stream: new ReadableStream<StreamPart>({
            start(c) {
              c.enqueue({ type: "stream-start", warnings: [] });
              c.enqueue({ type: "text-start", id: "t" });
              c.enqueue({ type: "text-delta", id: "t", delta: "first" });
              // Then nothing: only the abort can end this turn.
            },
          }),
        };
      },
    });
    const result = await collect(aiSdkRuntime({ model }).turn(input("x", { signal: controller.signal })), (e) => {
      if (e.type === "text") controller.abort();
    });
    // The model's stream never ends and the binding has no timer of its own: the turn returning at
    // all proves the abort ended it (were the abort lost, the test would time out).
    expect(result.error).toBeUndefined();
    expect(result.text).toBe("first");
    expect(modelSignal?.aborted).toBe(true);
  });
});

describe("ai-sdk on ai 5 - messages and titles", () => {
  it("sends images as image parts when vision is on", async () => {
    const model = new MockLanguageModelV2({ doStream: step(text("t", "A cat.")) });
    const media = [{ media_id: "img1", kind: "image" as const, mime: "image/png", size: 3, filename: "a.png" }];
    const base = input("what is it?", { readMedia: async () => new Uint8Array([1, 2, 3]) });
    await collect(aiSdkRuntime({ model, vision: true }).turn({ ...base, message: { ...base.message, media } }));
    const content = model.doStreamCalls[0].prompt.at(-1)!.content as Array<{ type: string; mediaType?: string }>;
    expect(content.map((p) => p.type)).toEqual(["text", "file"]);
    expect(content[1].mediaType).toBe("image/png");
  });

  it("generates a short title", async () => {
    const model = new MockLanguageModelV2({
      doGenerate: {
        content: [{ type: "text", text: "Title: Planning a Summer Trip to Paris and Lyon." }],
        finishReason: "stop",
        usage: usage(5, 5),
        warnings: [],
      },
    });
    const title = await aiSdkRuntime({ model }).generateTitle!("Help me plan a trip", new AbortController().signal);
    expect(title).toBe("Planning a Summer Trip to Paris");
    expect(JSON.stringify(model.doGenerateCalls[0].prompt)).toContain("Help me plan a trip");
  });
});
