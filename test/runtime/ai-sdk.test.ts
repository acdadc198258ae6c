import { describe, expect, it } from "vitest";
import { APICallError, tool } from "ai";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { z } from "zod";
import { isGatewayError } from "chat-gateway/protocol";
import { collect, input } from "./turn-helpers.js";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";

// The provider-level stream part, taken from the mock so the test needs no import from @ai-sdk/provider.
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

function step(parts: unknown[], finish: "stop" | "tool-calls" = "stop", tokens: [number, number] = [10, 5]) {
  const chunks = [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "r1", modelId: "mock-model-2025", timestamp: new Date(0) },
    ...parts,
    { type: "finish", finishReason: { unified: finish, raw: finish }, usage: usage(...tokens) },
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

describe("ai-sdk - streaming", () => {
  it("streams text and reasoning and reports usage with the model id", async () => {
    const model = new MockLanguageModelV3({
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
    const model = new MockLanguageModelV3({
      doStream: [
        step(
          [{ type: "tool-call", toolCallId: "call-1", toolName: "add", input: '{"a":2,"b":3}' }],
          "tool-calls",
          [20, 8],
        ),
        step(text("t", "It is 5."), "stop", [40, 4]),
      ],
    });
    const result = await collect(aiSdkRuntime({ model, tools: { add: addTool } }).turn(input("2+3?")));
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

  it("separates text written before a tool call from the text after it", async () => {
    const model = new MockLanguageModelV3({
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
    const result = await collect(aiSdkRuntime({ model, tools: { add: addTool } }).turn(input("1+2")));
    expect(result.text).toBe("Let me check.\n\nIt is 3.");
  });

  it("reports a throwing tool as failed and the turn goes on", async () => {
    const model = new MockLanguageModelV3({
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
    const result = await collect(aiSdkRuntime({ model, tools: { explode } }).turn(input("go")));
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
    const model = new MockLanguageModelV3({ doStream: [again(), again(), again()] });
    const { events } = await collect(aiSdkRuntime({ model, tools: { add: addTool }, maxSteps: 2 }).turn(input("loop")));
    expect(model.doStreamCalls).toHaveLength(2);
    expect(events.at(-1)).toEqual({
      type: "commentary",
      text: "Stopped at the step limit: the model still wanted to call tools.",
    });
  });

  it("ends the turn with a clear error on an error part, after the text so far", async () => {
    const model = new MockLanguageModelV3({
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
    const model = new MockLanguageModelV3({
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

  it("reports the last attempt when the AI SDK gave up retrying", async () => {
    const model = new MockLanguageModelV3({
      doStream: async () => {
        throw new APICallError({
          message: "Service Unavailable",
          url: "http://127.0.0.1/v1",
          requestBodyValues: {},
          statusCode: 503,
          responseHeaders: { "retry-after-ms": "1" },
          isRetryable: true,
        });
      },
    });
    const result = await collect(aiSdkRuntime({ model, streamTextOptions: { maxRetries: 1 } }).turn(input("x")));
    expect((result.error as Error).message).toBe("The model provider failed (HTTP 503): Service Unavailable");
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it("stops promptly and quietly when the signal aborts", async () => {
    const controller = new AbortController();
    let modelSignal: AbortSignal | undefined;
    const model = new MockLanguageModelV3({
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

describe("ai-sdk - messages, titles and commands", () => {
  it("sends images as image parts when vision is on", async () => {
    const model = new MockLanguageModelV3({ doStream: step(text("t", "A cat.")) });
    const media = [{ media_id: "img1", kind: "image" as const, mime: "image/png", size: 3, filename: "a.png" }];
    const base = input("what is it?", { readMedia: async () => new Uint8Array([1, 2, 3]) });
    await collect(aiSdkRuntime({ model, vision: true }).turn({ ...base, message: { ...base.message, media } }));
    const content = model.doStreamCalls[0].prompt.at(-1)!.content as Array<{ type: string; mediaType?: string }>;
    expect(content.map((p) => p.type)).toEqual(["text", "file"]);
    expect(content[1].mediaType).toBe("image/png");
  });

  it("sends an earlier answer's tool calls and results as the model's own tool-call and tool-result messages", async () => {
    const model = new MockLanguageModelV3({ doStream: step(text("t", "ok")) });
    const history = [
      { message_id: "u1", role: "user" as const, text: "add", reasoning: "", ts: 1, media: [] },
      {
        message_id: "a1",
        role: "assistant" as const,
        text: "It is 3.",
        reasoning: "",
        ts: 2,
        media: [],
        tools: [
          { index: 0, name: "add", preview: "", args: { a: 1, b: 2 }, output: { sum: 3 }, ok: true, duration: 0.1 },
          { index: 1, name: "add", preview: "", args: {}, output: "boom", ok: false, duration: 0 },
        ],
      },
    ];
    await collect(aiSdkRuntime({ model }).turn(input("again", { history })));
    const prompt = model.doStreamCalls[0].prompt as Array<{ role: string; content: any }>;
    const call = prompt.find(
      (m) => m.role === "assistant" && Array.isArray(m.content) && m.content[0]?.type === "tool-call",
    )!;
    expect(call.content.map((p: any) => [p.toolCallId, p.toolName, p.input])).toEqual([
      ["call_a1_0", "add", { a: 1, b: 2 }],
      ["call_a1_1", "add", {}],
    ]);
    const results = prompt.find((m) => m.role === "tool")!;
    expect(results.content.map((p: any) => [p.toolCallId, p.output])).toEqual([
      ["call_a1_0", { type: "text", value: '{"sum":3}' }],
      ["call_a1_1", { type: "error-text", value: "boom" }],
    ]);
    expect(prompt.indexOf(results)).toBeLessThan(
      prompt.findIndex((m) => m.role === "assistant" && JSON.stringify(m.content).includes("It is 3.")),
    );
  });

  it("generates a short title", async () => {
    const model = new MockLanguageModelV3({
      doGenerate: {
        content: [{ type: "text", text: "Title: Planning a Summer Trip to Paris and Lyon." }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: usage(5, 5),
        warnings: [],
      },
    });
    const title = await aiSdkRuntime({ model }).generateTitle!("Help me plan a trip", new AbortController().signal);
    expect(title).toBe("Planning a Summer Trip to Paris");
    expect(JSON.stringify(model.doGenerateCalls[0].prompt)).toContain("Help me plan a trip");
  });

  it("lists and answers its commands without calling the model", async () => {
    const model = new MockLanguageModelV3({ modelId: "mock-1" });
    const runtime = aiSdkRuntime({ model, tools: { add: addTool } });
    expect((await runtime.commands!()).map((c) => c.name)).toEqual(["/models", "/tools"]);
    const run = async (command: string) =>
      (await collect(runtime.command!({ ...input(command), command, args: "" }))).text;
    expect(await run("/models")).toBe("Model: mock-1");
    expect(await run("/tools")).toBe("- add: Adds two numbers");
    expect(model.doStreamCalls).toHaveLength(0);
    expect(aiSdkRuntime({ model, generateTitle: false }).generateTitle).toBeUndefined();
    expect(() => aiSdkRuntime({ model, maxSteps: 0 })).toThrow(TypeError);
  });
});
