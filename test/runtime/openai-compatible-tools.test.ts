// The OpenAI-compatible binding runs the model's tool calls and loops with their results: calls
// streamed in pieces, text around them, failing, unknown and odd tools, and the step limit.
import { describe, expect, it } from "vitest";
import { addTool } from "./fake-llm-scenarios.js";
import { chunk, sse, stream } from "./fake-llm-server.js";
import { openAICompatibleHarness, toolCallStep } from "./openai-compatible-harness.js";
import { collect, input } from "./turn-helpers.js";

const llm = openAICompatibleHarness();

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

  it("assembles streamed tool calls, runs them and loops with the results", async () => {
    llm.server.respond(stream(toolStep, { pieceBytes: 11 }), stream(answerStep));
    const { events, text, usage, error } = await collect(llm.runtime({ tools: { add: addTool } }).turn(input("add")));
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

    const [first, second] = llm.server.requests;
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
    llm.server.respond(
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
    const { text } = await collect(llm.runtime({ tools: { add: addTool } }).turn(input("1+2")));
    expect(text).toBe("Let me check.\n\nIt is 3.");
    expect(llm.server.requests[1].body.messages.at(-2)).toMatchObject({ role: "assistant", content: "Let me check." });
  });

  it("reports a throwing tool as failed, gives the model the error, and goes on", async () => {
    llm.server.respond(
      toolCallStep("call_1", "fail", "{}"),
      stream(sse([chunk({ content: "Sorry, that failed." }, {}, "stop")])),
    );
    const rt = llm.runtime({
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
    expect(llm.server.requests[1].body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_1",
      content: "Error: disk full",
    });
    expect(text).toBe("Sorry, that failed.");
  });

  it("reports an unknown tool and unparsable arguments as failed calls", async () => {
    llm.server.respond(
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
    const { events } = await collect(llm.runtime({ tools: { add: addTool } }).turn(input("go")));
    const ends = events.filter((e) => e.type === "tool-end");
    expect(ends).toMatchObject([
      { id: "c1", ok: false, output: "Unknown tool: nope" },
      { id: "c2", ok: false },
    ]);
    expect(events.find((e) => e.type === "tool-start" && e.id === "c2")).toMatchObject({
      args: { arguments: "{not json" },
    });
    expect(llm.server.requests[1].body.messages.at(-1).content).toMatch(/^Error: Invalid arguments for add/);
  });

  it("gives the model the text form of a tool result that is not JSON", async () => {
    llm.server.respond(toolCallStep("c", "big", "{}"), stream(sse([chunk({ content: "ok" }, {}, "stop")])));
    const { events, error } = await collect(
      llm.runtime({ tools: { big: { parameters: {}, execute: () => 10n ** 20n } } }).turn(input("x")),
    );
    expect(error).toBeUndefined();
    expect(events.find((e) => e.type === "tool-end")).toMatchObject({ ok: true, output: "100000000000000000000" });
    expect(llm.server.requests[1].body.messages.at(-1).content).toBe("100000000000000000000");
  });

  it("stops at maxSteps without running the last calls, and says so", async () => {
    const again = () => toolCallStep("c", "add", '{"a":1,"b":1}');
    llm.server.respond(again(), again(), again());
    let runs = 0;
    const rt = llm.runtime({ maxSteps: 2, tools: { add: { ...addTool, execute: () => ++runs } } });
    const { events, error } = await collect(rt.turn(input("loop")));
    expect(error).toBeUndefined();
    expect(llm.server.requests).toHaveLength(2);
    expect(runs).toBe(1);
    expect(events.filter((e) => e.type === "tool-start")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: "commentary",
      text: expect.stringContaining("Stopped after 2 model calls"),
    });
  });
});
