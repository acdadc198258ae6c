// The OpenAI-compatible binding reads the streams of the servers that speak its API: OpenAI,
// llama.cpp, vLLM, Ollama, OpenRouter, and a server that answers whole, however the bytes are split.
import { describe, expect, it } from "vitest";
import { chunk, json, sse, stream } from "./fake-llm-server.js";
import { openAICompatibleHarness } from "./openai-compatible-harness.js";
import { collect, input } from "./turn-helpers.js";

const llm = openAICompatibleHarness();

const OPENAI_TEXT = sse([
  chunk({ role: "assistant", content: "", refusal: null }),
  chunk({ content: "Héllo" }),
  chunk({ content: " wörld ✓" }),
  chunk({}, {}, "stop"),
  { ...chunk({}), choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } },
]);

describe("openai-compatible - streaming shapes", () => {
  it("streams OpenAI text and reports usage, and sends the documented request", async () => {
    llm.server.respond(stream(OPENAI_TEXT));
    const rt = llm.runtime({
      apiKey: "sk-test",
      systemPrompt: "Be brief.",
      headers: { "x-title": "chat-gateway" },
      body: { temperature: 0.2 },
      contextWindow: 128_000,
      prices: { input: 1, output: 2 },
    });
    const history = [
      { message_id: "m1", role: "user" as const, text: "Hi", reasoning: "", ts: 1, media: [] },
      { message_id: "m2", role: "assistant" as const, text: "Hello!", reasoning: "thought", ts: 2, media: [] },
    ];
    const { text, usage, error } = await collect(rt.turn(input("Say hi", { history })));
    expect(error).toBeUndefined();
    expect(text).toBe("Héllo wörld ✓");
    expect(usage).toEqual({
      type: "usage",
      model: "gpt-4o-mini-2024-07-18",
      promptTokens: 12,
      completionTokens: 5,
      totalTokens: 17,
      contextWindow: 128_000,
      cost: (12 * 1 + 5 * 2) / 1e6,
    });
    const [req] = llm.server.requests;
    expect(req.method).toBe("POST");
    expect(req.url).toBe("/v1/chat/completions");
    expect(req.headers.authorization).toBe("Bearer sk-test");
    expect(req.headers["x-title"]).toBe("chat-gateway");
    expect(req.body).toEqual({
      model: "gpt-4o-mini",
      temperature: 0.2,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "Say hi" },
      ],
    });
  });

  it("reassembles a stream split mid-line, mid-JSON and mid-character across TCP writes", async () => {
    llm.server.respond(stream(OPENAI_TEXT, { pieceBytes: 7, delayMs: 1 }));
    const { text, usage, error } = await collect(llm.runtime().turn(input("x")));
    expect(error).toBeUndefined();
    expect(text).toBe("Héllo wörld ✓");
    expect(usage).toMatchObject({ promptTokens: 12, totalTokens: 17 });
  });

  it("skips keep-alive comments and joins multi-line data fields", async () => {
    const body =
      ": keep-alive\n\n" +
      `data: ${JSON.stringify(chunk({ content: "one " }))}\n\n` +
      ": OPENROUTER PROCESSING\n\n" +
      // One event whose JSON spans two data lines (joined with a newline, still valid JSON).
      `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m",\ndata: "choices":[{"index":0,"delta":{"content":"two"},"finish_reason":"stop"}]}\n\n` +
      "data: [DONE]\n\n";
    llm.server.respond(stream(body, { pieceBytes: 5 }));
    const { text, error } = await collect(llm.runtime().turn(input("x")));
    expect(error).toBeUndefined();
    expect(text).toBe("one two");
  });

  it("streams llama.cpp reasoning_content and reads usage from the finishing chunk", async () => {
    const base = {
      id: "chatcmpl-x",
      object: "chat.completion.chunk",
      created: 1,
      model: "qwen3-8b-q4_k_m.gguf",
      system_fingerprint: "b6000",
    };
    llm.server.respond(
      stream(
        sse([
          { ...base, choices: [{ index: 0, finish_reason: null, delta: { role: "assistant", content: null } }] },
          { ...base, choices: [{ index: 0, finish_reason: null, delta: { reasoning_content: "Let me " } }] },
          { ...base, choices: [{ index: 0, finish_reason: null, delta: { reasoning_content: "think." } }] },
          { ...base, choices: [{ index: 0, finish_reason: null, delta: { content: "42" } }] },
          {
            ...base,
            choices: [{ index: 0, finish_reason: "stop", delta: {} }],
            usage: { completion_tokens: 8, prompt_tokens: 30, total_tokens: 38 },
            timings: { prompt_n: 30, predicted_n: 8 },
          },
        ]),
      ),
    );
    const { text, reasoning, usage } = await collect(llm.runtime().turn(input("x")));
    expect(reasoning).toBe("Let me think.");
    expect(text).toBe("42");
    expect(usage).toEqual({
      type: "usage",
      model: "qwen3-8b-q4_k_m.gguf",
      promptTokens: 30,
      completionTokens: 8,
      totalTokens: 38,
    });
  });

  it("takes vLLM reasoning once when it comes under both names", async () => {
    llm.server.respond(
      stream(
        sse([
          chunk({ role: "assistant", content: "" }),
          chunk({ reasoning: "Hmm", reasoning_content: "Hmm" }),
          chunk({ content: "Yes" }, {}, "stop"),
          { ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } },
        ]),
      ),
    );
    const { text, reasoning } = await collect(llm.runtime().turn(input("x")));
    expect(reasoning).toBe("Hmm");
    expect(text).toBe("Yes");
  });

  it("streams Ollama's shape with a whole tool call in one chunk and no index", async () => {
    const base = {
      id: "chatcmpl-450",
      object: "chat.completion.chunk",
      created: 1,
      model: "llama3.2",
      system_fingerprint: "fp_ollama",
    };
    llm.server.respond(
      stream(
        sse([
          {
            ...base,
            choices: [
              {
                index: 0,
                delta: {
                  role: "assistant",
                  content: "",
                  tool_calls: [
                    { id: "call_x1", type: "function", function: { name: "clock", arguments: '{"tz":"UTC"}' } },
                  ],
                },
                finish_reason: null,
              },
            ],
          },
          { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: "stop" }] },
          { ...base, choices: [], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 } },
        ]),
      ),
      stream(
        sse([
          {
            ...base,
            choices: [{ index: 0, delta: { role: "assistant", content: "It is noon." }, finish_reason: "stop" }],
          },
        ]),
      ),
    );
    const rt = llm.runtime({
      tools: {
        clock: {
          description: "time",
          parameters: { type: "object", properties: { tz: { type: "string" } } },
          execute: ({ tz }) => `12:00 ${tz}`,
        },
      },
    });
    const { events, text } = await collect(rt.turn(input("time?")));
    expect(text).toBe("It is noon.");
    expect(events.find((e) => e.type === "tool-start")).toMatchObject({
      id: "call_x1",
      name: "clock",
      args: { tz: "UTC" },
    });
    expect(events.find((e) => e.type === "tool-end")).toMatchObject({ id: "call_x1", output: "12:00 UTC", ok: true });
    expect(llm.server.requests[1].body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_x1",
      content: "12:00 UTC",
    });
  });

  it("streams OpenRouter's reasoning and takes the cost it reports over configured prices", async () => {
    const base = {
      id: "gen-1",
      provider: "DeepInfra",
      model: "deepseek/deepseek-r1",
      object: "chat.completion.chunk",
      created: 1,
    };
    llm.server.respond(
      stream(
        ": OPENROUTER PROCESSING\n\n" +
          sse([
            {
              ...base,
              choices: [
                {
                  index: 0,
                  delta: { role: "assistant", content: "", reasoning: "Think", reasoning_details: [] },
                  finish_reason: null,
                },
              ],
            },
            {
              ...base,
              choices: [
                {
                  index: 0,
                  delta: { role: "assistant", content: "Done" },
                  finish_reason: "stop",
                  native_finish_reason: "stop",
                },
              ],
            },
            {
              ...base,
              choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
              usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, cost: 0.00042, is_byok: false },
            },
          ]),
      ),
    );
    const { text, reasoning, usage } = await collect(
      llm.runtime({ prices: { input: 100, output: 100 } }).turn(input("x")),
    );
    expect(reasoning).toBe("Think");
    expect(text).toBe("Done");
    expect(usage).toMatchObject({ model: "deepseek/deepseek-r1", cost: 0.00042, totalTokens: 14 });
  });

  it("accepts a plain JSON completion from a server that ignores stream: true", async () => {
    llm.server.respond(
      json(200, {
        id: "x",
        object: "chat.completion",
        model: "tiny",
        choices: [{ index: 0, message: { role: "assistant", content: "Whole answer" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      }),
    );
    const { text, usage, error } = await collect(llm.runtime().turn(input("x")));
    expect(error).toBeUndefined();
    expect(text).toBe("Whole answer");
    expect(usage).toMatchObject({ model: "tiny", totalTokens: 3 });
  });
});
