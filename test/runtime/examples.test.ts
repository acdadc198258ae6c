// The two runtime examples, run over a real WebSocket against the loopback model server (as a user
// points them at llama.cpp or Ollama), and the AI SDK one also against the AI SDK's mock model.
// Neither touches the network.
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { start as startOpenAICompatible } from "../../examples/openai-compatible/main.js";
import { modelFromEnv, start as startAiSdk } from "../../examples/ai-sdk-agent/main.js";
import { chunk, sse, startFakeLlmServer, stream } from "./fake-llm-server.js";
import type { FakeLlmServer } from "./fake-llm-server.js";
import { checkedFrame } from "../fixtures/frame-check.js";

type Frame = { type: string; id?: string; payload?: any; seq?: number };
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Says hello, sends one message to the default channel, and returns every frame up to the final answer. */
async function ask(url: string, text: string): Promise<Frame[]> {
  const socket = new WebSocket(url);
  cleanups.push(() => socket.close());
  const frames: Frame[] = [];
  const waiters: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }> = [];
  socket.on("message", (data, isBinary) => {
    if (isBinary) return;
    const frame = checkedFrame<Frame>(String(data));
    frames.push(frame);
    for (const w of waiters.splice(0)) w.match(frame) ? w.resolve(frame) : waiters.push(w);
  });
  const next = (match: (f: Frame) => boolean) =>
    new Promise<Frame>((resolve) => {
      const seen = frames.find(match);
      if (seen) resolve(seen);
      else waiters.push({ match, resolve });
    });
  await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
  socket.send(
    JSON.stringify({ type: "hello", id: "h", payload: { token: "", device_id: "test-device", device_name: "vitest" } }),
  );
  await next((f) => f.type === "hello.ok");
  socket.send(JSON.stringify({ type: "channel.list", id: "l" }));
  const list = await next((f) => f.type === "channel.list");
  const channel = list.payload.channels.find((c: { kind: string }) => c.kind === "default");
  socket.send(JSON.stringify({ type: "message.send", id: "s", payload: { chat_id: channel.chat_id, text } }));
  await next((f) => f.type === "message.stop" || (f.type === "message" && f.payload.role === "assistant"));
  return frames;
}

function finalOf(frames: Frame[]) {
  const final = frames.find(
    (f) => f.type === "message.stop" || (f.type === "message" && f.payload.role === "assistant"),
  )!;
  return { text: final.payload.final_text ?? final.payload.text, tokens: final.payload.tokens };
}

/** Asks the time; the answer is "It is noon." after one `clock` tool call, seen over the wire. */
async function askTheTime(url: string): Promise<Frame[]> {
  const frames = await ask(url, "What time is it?");
  expect(finalOf(frames).text).toBe("It is noon.");
  expect(frames.find((f) => f.type === "tool.start")?.payload).toMatchObject({ name: "clock", args: {} });
  expect(frames.find((f) => f.type === "tool.end")?.payload).toMatchObject({ name: "clock", ok: true });
  return frames;
}

/** A loopback model server that first calls the `clock` tool, then answers "It is noon." (43 tokens). */
async function clockThenNoon(): Promise<FakeLlmServer> {
  const llm = await startFakeLlmServer();
  cleanups.push(() => llm.close());
  llm.respond(
    stream(
      sse([
        chunk(
          { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "clock", arguments: "{}" } }] },
          {},
          "tool_calls",
        ),
      ]),
    ),
    stream(
      sse([
        chunk({ content: "It is " }),
        chunk({ content: "noon." }, {}, "stop"),
        { ...chunk({}), choices: [], usage: { prompt_tokens: 40, completion_tokens: 3, total_tokens: 43 } },
      ]),
    ),
  );
  return llm;
}

describe("examples - runtime wiring", () => {
  it("examples/openai-compatible answers over WebSocket through the loopback model server, tool included", async () => {
    const llm = await clockThenNoon();
    const example = await startOpenAICompatible({ port: 0, baseUrl: llm.baseUrl, model: "gpt-4o-mini" });
    cleanups.push(() => example.close());

    const frames = await askTheTime(example.url);
    expect(finalOf(frames).tokens).toBe(43);
    expect(llm.requests[1].body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1" });
  });

  it("examples/ai-sdk-agent answers over WebSocket through a local OpenAI-compatible server chosen by OPENAI_BASE_URL, tool included", async () => {
    const llm = await clockThenNoon();
    const model = modelFromEnv({ OPENAI_BASE_URL: llm.baseUrl, OPENAI_MODEL: "qwen3-8b", OPENAI_API_KEY: "local-key" });
    const example = await startAiSdk({ port: 0, model });
    cleanups.push(() => example.close());

    const frames = await askTheTime(example.url);
    expect(finalOf(frames).tokens).toBe(43);
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[0].body).toMatchObject({ model: "qwen3-8b", stream: true });
    expect(llm.requests[0].headers.authorization).toBe("Bearer local-key");
    expect(llm.requests[1].body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1" });
  });

  it("examples/ai-sdk-agent answers over WebSocket through the AI SDK's mock model, tool included", async () => {
    const usage = (i: number, o: number) => ({
      inputTokens: { total: i, noCache: i, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: o, text: o, reasoning: undefined },
    });
    const step = (parts: unknown[], finish: "stop" | "tool-calls") => ({
      stream: simulateReadableStream<StreamPart>({
        chunks: [
          { type: "stream-start", warnings: [] },
          { type: "response-metadata", id: "r", modelId: "mock-model", timestamp: new Date(0) },
          ...parts,
          { type: "finish", finishReason: { unified: finish, raw: finish }, usage: usage(30, 4) },
        ] as StreamPart[],
      }),
    });
    const model = new MockLanguageModelV3({
      doStream: [
        step([{ type: "tool-call", toolCallId: "call-1", toolName: "clock", input: "{}" }], "tool-calls"),
        step(
          [
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "It is " },
            { type: "text-delta", id: "t", delta: "noon." },
            { type: "text-end", id: "t" },
          ],
          "stop",
        ),
      ],
    });
    const example = await startAiSdk({ port: 0, model });
    cleanups.push(() => example.close());

    const frames = await askTheTime(example.url);
    expect(finalOf(frames).tokens).toBe(68);
    expect(model.doStreamCalls).toHaveLength(2);
  });
});
