// A lane's chosen model (TurnInput.model, set with picker.model or /model) reaches the provider
// when the binding offers it; any other choice falls back to the binding's default model.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { chunk, sse, startFakeLlmServer, stream } from "./fake-llm-server.js";
import type { FakeLlmServer } from "./fake-llm-server.js";
import { collect, input } from "./turn-helpers.js";
import { createGatewayClient, type GatewayClient, type MessageStopPayload } from "chat-gateway/client";
import { startGateway, type Harness } from "../gateway/harness.js";
import { until } from "../client/helpers.js";

describe("openai-compatible - the lane's model", () => {
  let server: FakeLlmServer;
  beforeEach(async () => {
    server = await startFakeLlmServer();
  });
  afterEach(async () => {
    await server.close();
  });

  const ANSWER = sse([chunk({ content: "Hi" }), chunk({}, {}, "stop")]);
  const runtime = () =>
    openAICompatibleRuntime({ baseUrl: server.baseUrl, model: "small", models: [{ id: "large", label: "Large" }] });

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
    expect(() => openAICompatibleRuntime({ baseUrl: server.baseUrl, model: "m", models: [{ id: "" }] })).toThrow(
      /models must be a list/,
    );
  });
});

describe("ai-sdk - the lane's model", () => {
  type StreamPart =
    Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  };
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

describe("/models over the wire", () => {
  let server: FakeLlmServer;
  let h: Harness;
  let phone: GatewayClient;
  beforeEach(async () => {
    server = await startFakeLlmServer();
  });
  afterEach(async () => {
    phone?.close();
    await h?.close();
    await server.close();
  });

  async function say(text: string): Promise<MessageStopPayload> {
    const stopped = new Promise<MessageStopPayload>((resolve) => phone.once("message.stop", resolve));
    await phone.sendMessage({ chat_id: "default", text });
    return stopped;
  }

  it("opens a model picker with the offered models, and the lane's later turns use the choice", async () => {
    const runtime = openAICompatibleRuntime({
      baseUrl: server.baseUrl,
      model: "small",
      models: [{ id: "large", label: "Large" }],
      generateTitle: false,
    });
    h = await startGateway({ runtime });
    phone = createGatewayClient({ url: h.url, deviceId: "phone", reconnect: false, pingIntervalMs: 0 });
    await phone.connect();
    await phone.ready();
    expect((await phone.complete({ chat_id: "default", thread_id: null }, "/model l")).map((c) => c.value)).toEqual([
      "/model large",
    ]);

    const answered = say("/models");
    const ask = await until(() => phone.openAsks().find((a) => a.kind === "model"), "the model picker");
    expect(ask.kind === "model" && ask.models).toEqual([
      { id: "small", label: "small", current: true },
      { id: "large", label: "Large" },
    ]);
    await phone.select(ask.picker_id, { option_id: "large" });
    expect((await answered).final_text).toBe("Model: large");

    server.respond(stream(sse([chunk({ content: "Hi" }), chunk({}, {}, "stop")])));
    await say("hello");
    expect(server.requests.at(-1)!.body.model).toBe("large");
  });
});
