// A lane's chosen model (TurnInput.model, set with picker.model or /model) reaches the provider
// when the binding offers it; any other choice falls back to the binding's default model.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { chunk, sse, startFakeLlmServer, stream } from "./fake-llm-server.js";
import type { FakeLlmServer } from "./fake-llm-server.js";
import { collect, input } from "./turn-helpers.js";

describe("openai-compatible - the lane's model", () => {
  let server: FakeLlmServer;
  beforeEach(async () => {
    server = await startFakeLlmServer();
  });
  afterEach(async () => {
    await server.close();
  });

  const ANSWER = sse([chunk({ content: "Hi" }), chunk({}, {}, "stop")]);
  const runtime = () => openAICompatibleRuntime({ baseUrl: server.baseUrl, model: "small", models: [{ id: "large", label: "Large" }] });

  it.each([
    ["an offered model is used", "large", "large"],
    ["a model it does not offer falls back to the default", "elsewhere", "small"],
    ["no choice uses the default", undefined, "small"],
  ])("%s", async (_label, chosen, sent) => {
    server.respond(stream(ANSWER));
    const result = await collect(runtime().turn(input("hi", chosen === undefined ? {} : { model: chosen })));
    expect(result.error).toBeUndefined();
    expect(server.requests[0].body.model).toBe(sent);
  });

  it("refuses a models option that is not a list of ids", () => {
    expect(() => openAICompatibleRuntime({ baseUrl: server.baseUrl, model: "m", models: [{ id: "" }] })).toThrow(/models must be a list/);
  });
});

describe("ai-sdk - the lane's model", () => {
  type StreamPart = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };
  const answer = (text: string) => ({
    stream: simulateReadableStream<StreamPart>({
      chunks: [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: text },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
      ] as StreamPart[],
    }),
  });

  it("answers with the chosen model when offered, else with the default", async () => {
    const small = new MockLanguageModelV3({ modelId: "small", doStream: async () => answer("small") });
    const large = new MockLanguageModelV3({ modelId: "large", doStream: async () => answer("large") });
    const runtime = aiSdkRuntime({ model: small, models: [{ id: "large", model: large }], generateTitle: false });
    expect((await collect(runtime.turn(input("hi", { model: "large" })))).text).toBe("large");
    expect((await collect(runtime.turn(input("hi", { model: "nope" })))).text).toBe("small");
    expect((await collect(runtime.turn(input("hi")))).usage).toMatchObject({ model: "small" });
  });
});
