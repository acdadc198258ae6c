import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGatewayError } from "chat-gateway";
import { collect, input } from "./turn-helpers.js";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import type { OpenAICompatibleRuntimeOptions } from "chat-gateway/runtime/openai-compatible";
import { chunk, json, sse, startFakeLlmServer, stream } from "./fake-llm-server.js";
import type { FakeLlmServer } from "./fake-llm-server.js";

let server: FakeLlmServer;
beforeEach(async () => {
  server = await startFakeLlmServer();
});
afterEach(async () => {
  await server.close();
});

function runtime(extra: Partial<OpenAICompatibleRuntimeOptions> = {}) {
  return openAICompatibleRuntime({ baseUrl: server.baseUrl, model: "gpt-4o-mini", ...extra });
}

const OPENAI_TEXT = sse([
  chunk({ role: "assistant", content: "", refusal: null }),
  chunk({ content: "Héllo" }),
  chunk({ content: " wörld ✓" }),
  chunk({}, {}, "stop"),
  { ...chunk({}), choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } },
]);

describe("openai-compatible - streaming shapes", () => {
  it("streams OpenAI text and reports usage, and sends the documented request", async () => {
    server.respond(stream(OPENAI_TEXT));
    const rt = runtime({
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
    const [req] = server.requests;
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
    server.respond(stream(OPENAI_TEXT, { pieceBytes: 7, delayMs: 1 }));
    const { text, usage, error } = await collect(runtime().turn(input("x")));
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
    server.respond(stream(body, { pieceBytes: 5 }));
    const { text, error } = await collect(runtime().turn(input("x")));
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
    server.respond(
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
    const { text, reasoning, usage } = await collect(runtime().turn(input("x")));
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
    server.respond(
      stream(
        sse([
          chunk({ role: "assistant", content: "" }),
          chunk({ reasoning: "Hmm", reasoning_content: "Hmm" }),
          chunk({ content: "Yes" }, {}, "stop"),
          { ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } },
        ]),
      ),
    );
    const { text, reasoning } = await collect(runtime().turn(input("x")));
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
    server.respond(
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
    const rt = runtime({
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
    expect(server.requests[1].body.messages.at(-1)).toEqual({
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
    server.respond(
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
    const { text, reasoning, usage } = await collect(runtime({ prices: { input: 100, output: 100 } }).turn(input("x")));
    expect(reasoning).toBe("Think");
    expect(text).toBe("Done");
    expect(usage).toMatchObject({ model: "deepseek/deepseek-r1", cost: 0.00042, totalTokens: 14 });
  });

  it("accepts a plain JSON completion from a server that ignores stream: true", async () => {
    server.respond(
      json(200, {
        id: "x",
        object: "chat.completion",
        model: "tiny",
        choices: [{ index: 0, message: { role: "assistant", content: "Whole answer" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      }),
    );
    const { text, usage, error } = await collect(runtime().turn(input("x")));
    expect(error).toBeUndefined();
    expect(text).toBe("Whole answer");
    expect(usage).toMatchObject({ model: "tiny", totalTokens: 3 });
  });
});

describe("openai-compatible - tools", () => {
  const toolStep = sse([
    chunk({
      role: "assistant",
      content: null,
      tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "add", arguments: "" } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a": ' } }] }),
    chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "add", arguments: "" } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '2, "b": 3}' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '{"a":1,"b":1}' } }] }),
    chunk({}, {}, "tool_calls"),
    { ...chunk({}), choices: [], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } },
  ]);
  const answerStep = sse([
    chunk({ content: "5 and 2" }, {}, "stop"),
    { ...chunk({}), choices: [], usage: { prompt_tokens: 160, completion_tokens: 4, total_tokens: 164 } },
  ]);
  const addTool = {
    description: "Adds two numbers",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    execute: ({ a, b }: Record<string, unknown>) => ({ sum: (a as number) + (b as number) }),
  };

  it("assembles streamed tool calls, runs them and loops with the results", async () => {
    server.respond(stream(toolStep, { pieceBytes: 11 }), stream(answerStep));
    const { events, text, usage, error } = await collect(runtime({ tools: { add: addTool } }).turn(input("add")));
    expect(error).toBeUndefined();
    expect(text).toBe("5 and 2");
    const tools = events.filter((e) => e.type === "tool-start" || e.type === "tool-end");
    expect(tools.map((e) => e.type)).toEqual(["tool-start", "tool-end", "tool-start", "tool-end"]);
    expect(tools[0]).toEqual({
      type: "tool-start",
      id: "call_a",
      name: "add",
      args: { a: 2, b: 3 },
      preview: "add(a=2, b=3)",
    });
    expect(tools[1]).toMatchObject({ type: "tool-end", id: "call_a", name: "add", output: { sum: 5 }, ok: true });
    expect((tools[1] as { duration: number }).duration).toBeGreaterThanOrEqual(0);
    expect(tools[3]).toMatchObject({ id: "call_b", output: { sum: 2 }, ok: true });
    // Totals over both calls; prompt tokens of the last call.
    expect(usage).toMatchObject({ promptTokens: 160, completionTokens: 24, totalTokens: 284 });

    const [first, second] = server.requests;
    expect(first.body.tools).toEqual([
      { type: "function", function: { name: "add", description: "Adds two numbers", parameters: addTool.parameters } },
    ]);
    expect(second.body.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "add", arguments: '{"a": 2, "b": 3}' } },
          { id: "call_b", type: "function", function: { name: "add", arguments: '{"a":1,"b":1}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: '{"sum":5}' },
      { role: "tool", tool_call_id: "call_b", content: '{"sum":2}' },
    ]);
  });

  it("separates text written before a tool call from the text after it", async () => {
    server.respond(
      stream(
        sse([
          chunk({ content: "Let me check." }),
          chunk(
            {
              tool_calls: [
                { index: 0, id: "c", type: "function", function: { name: "add", arguments: '{"a":1,"b":2}' } },
              ],
            },
            {},
            "tool_calls",
          ),
        ]),
      ),
      stream(sse([chunk({ content: "It is 3." }, {}, "stop")])),
    );
    const { text } = await collect(runtime({ tools: { add: addTool } }).turn(input("1+2")));
    expect(text).toBe("Let me check.\n\nIt is 3.");
    expect(server.requests[1].body.messages.at(-2)).toMatchObject({ role: "assistant", content: "Let me check." });
  });

  it("reports a throwing tool as failed, gives the model the error, and goes on", async () => {
    server.respond(
      stream(
        sse([
          chunk(
            { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "fail", arguments: "{}" } }] },
            {},
            "tool_calls",
          ),
        ]),
      ),
      stream(sse([chunk({ content: "Sorry, that failed." }, {}, "stop")])),
    );
    const rt = runtime({
      tools: {
        fail: {
          parameters: { type: "object", properties: {} },
          execute: () => {
            throw new Error("disk full");
          },
        },
      },
    });
    const { events, text, error } = await collect(rt.turn(input("go")));
    expect(error).toBeUndefined();
    expect(events.find((e) => e.type === "tool-end")).toMatchObject({ name: "fail", ok: false, output: "disk full" });
    expect(server.requests[1].body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_1",
      content: "Error: disk full",
    });
    expect(text).toBe("Sorry, that failed.");
  });

  it("reports an unknown tool and unparsable arguments as failed calls", async () => {
    server.respond(
      stream(
        sse([
          chunk({
            tool_calls: [
              { index: 0, id: "c1", type: "function", function: { name: "nope", arguments: "{}" } },
              { index: 1, id: "c2", type: "function", function: { name: "add", arguments: "{not json" } },
            ],
          }),
        ]),
      ),
      stream(sse([chunk({ content: "ok" }, {}, "stop")])),
    );
    const { events } = await collect(runtime({ tools: { add: addTool } }).turn(input("go")));
    const ends = events.filter((e) => e.type === "tool-end");
    expect(ends).toMatchObject([
      { id: "c1", ok: false, output: "Unknown tool: nope" },
      { id: "c2", ok: false },
    ]);
    expect(events.find((e) => e.type === "tool-start" && e.id === "c2")).toMatchObject({
      args: { arguments: "{not json" },
    });
    expect(server.requests[1].body.messages.at(-1).content).toMatch(/^Error: Invalid arguments for add/);
  });

  it("gives the model the text form of a tool result that is not JSON", async () => {
    server.respond(
      stream(
        sse([
          chunk(
            { tool_calls: [{ index: 0, id: "c", type: "function", function: { name: "big", arguments: "{}" } }] },
            {},
            "tool_calls",
          ),
        ]),
      ),
      stream(sse([chunk({ content: "ok" }, {}, "stop")])),
    );
    const { events, error } = await collect(
      runtime({ tools: { big: { parameters: {}, execute: () => 10n ** 20n } } }).turn(input("x")),
    );
    expect(error).toBeUndefined();
    expect(events.find((e) => e.type === "tool-end")).toMatchObject({ ok: true, output: "100000000000000000000" });
    expect(server.requests[1].body.messages.at(-1).content).toBe("100000000000000000000");
  });

  it("stops at maxSteps without running the last calls, and says so", async () => {
    const again = () =>
      stream(
        sse([
          chunk(
            {
              tool_calls: [
                { index: 0, id: "c", type: "function", function: { name: "add", arguments: '{"a":1,"b":1}' } },
              ],
            },
            {},
            "tool_calls",
          ),
        ]),
      );
    server.respond(again(), again(), again());
    let runs = 0;
    const rt = runtime({ maxSteps: 2, tools: { add: { ...addTool, execute: () => ++runs } } });
    const { events, error } = await collect(rt.turn(input("loop")));
    expect(error).toBeUndefined();
    expect(server.requests).toHaveLength(2);
    expect(runs).toBe(1);
    expect(events.filter((e) => e.type === "tool-start")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: "commentary",
      text: expect.stringContaining("Stopped after 2 model calls"),
    });
  });
});

describe("openai-compatible - failures", () => {
  async function failure(rt = runtime()) {
    const result = await collect(rt.turn(input("x")));
    expect(result.error).toBeInstanceOf(Error);
    expect(isGatewayError(result.error)).toBe(true);
    return { ...result, message: (result.error as Error).message, code: (result.error as { code: string }).code };
  }

  it("says the API key was refused on 401", async () => {
    server.respond(
      json(401, { error: { message: "Incorrect API key provided: sk-bad", type: "invalid_request_error" } }),
    );
    const { message } = await failure();
    expect(message).toMatch(/^The model server refused the API key \(HTTP 401\)/);
  });

  it("says when to retry on 429 with Retry-After", async () => {
    server.respond(json(429, { error: { message: "slow down" } }, { "retry-after": "20" }));
    const { message, code } = await failure();
    expect(message).toMatch(/^Rate limited by the model server; retry after 20 s/);
    expect(code).toBe("rate_limited");
  });

  it("reports a server error with the server's message", async () => {
    server.respond(json(500, { error: { message: "CUDA out of memory" } }));
    const { message } = await failure();
    expect(message).toBe("The model server failed (HTTP 500): CUDA out of memory");
  });

  it("keeps the text that arrived before a connection dropped mid-stream", async () => {
    server.respond(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "partial " }))}\n\n`);
      await new Promise((r) => setTimeout(r, 30));
      res.socket?.destroy();
    });
    const { text, message } = await failure();
    expect(text).toBe("partial ");
    expect(message).toMatch(/dropped mid-answer/);
  });

  it("treats a clean end of stream without [DONE] or a finish reason as dropped", async () => {
    server.respond(stream(sse([chunk({ content: "half" })], { done: false })));
    const { text, message } = await failure();
    expect(text).toBe("half");
    expect(message).toMatch(/dropped mid-answer/);
  });

  it("keeps the text before a malformed chunk and names the chunk", async () => {
    server.respond(
      stream(`data: ${JSON.stringify(chunk({ content: "ok " }))}\n\ndata: {"choices": [oops\n\ndata: [DONE]\n\n`),
    );
    const { text, message } = await failure();
    expect(text).toBe("ok ");
    expect(message).toMatch(/^The model server sent a malformed stream chunk: \{"choices": \[oops/);
  });

  it("reports an error the server sends mid-stream", async () => {
    server.respond(
      stream(sse([chunk({ content: "a" }), { error: { message: "Provider returned error", code: 502 } }])),
    );
    const { text, message } = await failure();
    expect(text).toBe("a");
    expect(message).toBe("The model server reported an error: Provider returned error");
  });

  it("says the server cannot be reached", async () => {
    const url = server.baseUrl;
    await server.close();
    const { message } = await failure(openAICompatibleRuntime({ baseUrl: url, model: "m" }));
    expect(message).toMatch(/^Could not reach the model server at http:\/\/127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\)/);
    // A key in the URL's user, password or query is not shown.
    const keyed = `${url.replace("http://", "http://me:sk-secret@")}?key=sk-secret`;
    const hidden = await failure(openAICompatibleRuntime({ baseUrl: keyed, model: "m" }));
    expect(hidden.message).toMatch(/^Could not reach the model server at http:\/\/127\.0\.0\.1:\d+\/v1 \(/);
    expect(hidden.message, hidden.message).not.toContain("sk-secret");
    server = await startFakeLlmServer();
  });

  it("times out when the server does not answer", async () => {
    server.respond(() => {
      // Never answers.
    });
    const { message } = await failure(runtime({ timeoutMs: 150 }));
    expect(message).toBe("The model server did not answer within 0.2 s");
  });

  it("times out when the stream goes silent, keeping the text so far", async () => {
    server.respond((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "so far" }))}\n\n`);
    });
    const started = Date.now();
    const { text, message } = await failure(runtime({ timeoutMs: 200 }));
    expect(text).toBe("so far");
    expect(message).toBe("The model server stopped sending for 0.2 s; the answer is incomplete");
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("openai-compatible - timeouts and request options", () => {
  it("does not count a slow consumer against the server's timeout", async () => {
    server.respond(
      stream(sse([chunk({ content: "a" }), chunk({ content: "b" }, {}, "stop")]), { pieceBytes: 40, delayMs: 5 }),
    );
    let text = "";
    let error: unknown;
    try {
      for await (const event of runtime({ timeoutMs: 100 }).turn(input("x"))) {
        if (event.type !== "text") continue;
        text += event.delta;
        // The consumer is slow (a storage write, a slow socket); the server is not.
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } catch (e) {
      error = e;
    }
    expect(error).toBeUndefined();
    expect(text).toBe("ab");
  });

  it("lets body drop stream_options for servers that reject it, but never turns streaming off", async () => {
    server.respond(stream(sse([chunk({ content: "a" }, {}, "stop")])));
    await collect(runtime({ body: { stream_options: undefined, stream: false, max_tokens: 50 } }).turn(input("x")));
    expect(server.requests[0].body).not.toHaveProperty("stream_options");
    expect(server.requests[0].body).toMatchObject({ stream: true, max_tokens: 50 });
  });
});

describe("openai-compatible - abort", () => {
  it("stops promptly when the signal aborts, and the server sees the request closed", async () => {
    server.respond((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "first" }))}\n\n`);
      // Then silence: only the abort can end this turn.
    });
    const controller = new AbortController();
    const started = Date.now();
    const { text, error } = await collect(runtime().turn(input("x", { signal: controller.signal })), (e) => {
      if (e.type === "text") controller.abort();
    });
    expect(error).toBeUndefined();
    expect(text).toBe("first");
    expect(Date.now() - started).toBeLessThan(5_000);
    await server.requests[0].closedEarly;
  });

  it("stops waiting for a tool that ignores the signal", async () => {
    server.respond(
      stream(
        sse([
          chunk(
            { tool_calls: [{ index: 0, id: "c", type: "function", function: { name: "slow", arguments: "{}" } }] },
            {},
            "tool_calls",
          ),
        ]),
      ),
    );
    const controller = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const rt = runtime({
      tools: {
        slow: {
          parameters: { type: "object" },
          execute: (_args, { signal }) => {
            toolSignal = signal;
            setTimeout(() => controller.abort(), 20);
            return new Promise(() => {});
          },
        },
      },
    });
    const { events, error } = await collect(rt.turn(input("x", { signal: controller.signal })));
    expect(error).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(["usage", "tool-start"]);
    expect(toolSignal?.aborted).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("does not call the server when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const { events, error } = await collect(runtime().turn(input("x", { signal: controller.signal })));
    expect(error).toBeUndefined();
    expect(events).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });
});

describe("openai-compatible - messages, titles and commands", () => {
  it("describes attachments in text, or sends images when vision is on", async () => {
    const media = [
      { media_id: "img1", kind: "image" as const, mime: "image/png", size: 3, filename: "a.png" },
      { media_id: "doc1", kind: "document" as const, mime: "application/pdf", size: 10, filename: "b.pdf" },
    ];
    server.respond(
      stream(sse([chunk({ content: "a" }, {}, "stop")])),
      stream(sse([chunk({ content: "b" }, {}, "stop")])),
    );
    const readMedia = async (id: string) => (id === "img1" ? new Uint8Array([1, 2, 3]) : new Uint8Array());
    const base = input("look", { readMedia });
    await collect(runtime().turn({ ...base, message: { ...base.message, media } }));
    await collect(runtime({ vision: true }).turn({ ...base, message: { ...base.message, media } }));
    expect(server.requests[0].body.messages.at(-1)).toEqual({
      role: "user",
      content:
        "look\n[Attached image: a.png (image/png, 3 bytes)]\n[Attached document: b.pdf (application/pdf, 10 bytes)]",
    });
    expect(server.requests[1].body.messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "text", text: "look\n[Attached document: b.pdf (application/pdf, 10 bytes)]" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AQID" } },
      ],
    });
  });

  it("generates a short title with a non-streaming call", async () => {
    server.respond(
      json(200, {
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: '<think>hm</think>\n"Planning a Summer Trip to Paris and Lyon."' },
          },
        ],
      }),
    );
    const rt = runtime({ titleModel: "tiny" });
    const title = await rt.generateTitle!(
      "I want to plan a trip to Paris and Lyon this summer",
      new AbortController().signal,
    );
    expect(title).toBe("Planning a Summer Trip to Paris");
    expect(server.requests[0].body).toMatchObject({ model: "tiny", stream: false });
    expect(server.requests[0].body.messages[1]).toEqual({
      role: "user",
      content: "I want to plan a trip to Paris and Lyon this summer",
    });
  });

  it("fails the title on an HTTP error and offers no title when disabled", async () => {
    server.respond(json(503, { error: { message: "loading model" } }));
    await expect(runtime().generateTitle!("x", new AbortController().signal)).rejects.toThrow(
      "The model server failed (HTTP 503): loading model",
    );
    expect(runtime({ generateTitle: false }).generateTitle).toBeUndefined();
  });

  it("lists and answers its commands without calling the model", async () => {
    const rt = runtime({ tools: { add: { description: "Adds", parameters: {}, execute: () => 0 } } });
    expect((await rt.commands!()).map((c) => c.name)).toEqual(["/models", "/tools"]);
    const run = async (command: string) => (await collect(rt.command!({ ...input(command), command, args: "" }))).text;
    expect(await run("/models")).toBe("Model: gpt-4o-mini");
    expect(await run("/tools")).toBe("- add: Adds");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a bad configuration at construction", () => {
    expect(() => openAICompatibleRuntime({ baseUrl: "localhost:8080", model: "m" })).toThrow(TypeError);
    expect(() => openAICompatibleRuntime({ baseUrl: "http://x", model: "" })).toThrow(TypeError);
    expect(() => openAICompatibleRuntime({ baseUrl: "http://x", model: "m", maxSteps: 0 })).toThrow(TypeError);
    expect(() => openAICompatibleRuntime({ baseUrl: "http://x", model: "m", tools: { t: {} as never } })).toThrow(
      TypeError,
    );
  });
});
