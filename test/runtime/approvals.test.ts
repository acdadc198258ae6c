// Tool approval in both bindings: a call that needs approval asks the person (TurnInput.ask) with
// the tool and its full arguments, runs only when approved, and otherwise tells the model.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tool } from "ai";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { z } from "zod";
import type { Ask, AskAnswer } from "chat-gateway";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { chunk, sse, startFakeLlmServer, stream } from "./fake-llm-server.js";
import type { FakeLlmServer } from "./fake-llm-server.js";
import { collect, input } from "./turn-helpers.js";

/** A person who answers every ask with `answer`, and remembers what was asked. */
function person(answer: AskAnswer) {
  const asked: Ask[] = [];
  return {
    asked,
    ask: async (request: Ask) => {
      asked.push(request);
      return answer;
    },
  };
}
const APPROVE: AskAnswer = { outcome: "selected", option_id: "approve" };
const DENY: AskAnswer = { outcome: "selected", option_id: "deny" };
const EXPIRED: AskAnswer = { outcome: "expired" };

describe("openai-compatible - tool approval", () => {
  let server: FakeLlmServer;
  beforeEach(async () => {
    server = await startFakeLlmServer();
  });
  afterEach(async () => {
    await server.close();
  });

  const CALL = sse([
    chunk({
      role: "assistant",
      content: null,
      tool_calls: [
        {
          index: 0,
          id: "call_1",
          type: "function",
          function: { name: "rm", arguments: '{"path":"/tmp/x","force":true}' },
        },
      ],
    }),
    chunk({}, {}, "tool_calls"),
  ]);
  const DONE = sse([chunk({ content: "Done." }), chunk({}, {}, "stop")]);

  function rmRuntime(needsApproval: Parameters<typeof openAICompatibleRuntime>[0]["needsApproval"], ran: unknown[]) {
    return openAICompatibleRuntime({
      baseUrl: server.baseUrl,
      model: "gpt-4o-mini",
      needsApproval,
      tools: {
        rm: {
          parameters: { type: "object" },
          execute: (args) => {
            ran.push(args);
            return "removed";
          },
        },
        ls: { parameters: { type: "object" }, execute: () => "a b" },
      },
    });
  }

  it("asks with the tool and its full arguments, and runs the tool once approved", async () => {
    server.respond(stream(CALL), stream(DONE));
    const ran: unknown[] = [];
    const { asked, ask } = person(APPROVE);
    const result = await collect(rmRuntime(["rm"], ran).turn(input("clean up", { ask })));
    expect(result.error).toBeUndefined();
    expect(asked).toEqual([
      {
        kind: "approval",
        title: "Run rm?",
        body: "rm(path=/tmp/x, force=true)",
        tool: { name: "rm", args: { path: "/tmp/x", force: true } },
      },
    ]);
    expect(ran).toEqual([{ path: "/tmp/x", force: true }]);
    expect(result.events.find((e) => e.type === "tool-end")).toMatchObject({ name: "rm", ok: true, output: "removed" });
    expect(server.requests[1].body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_1",
      content: "removed",
    });
    expect(result.text).toBe("Done.");
  });

  it.each([
    ["denied", DENY, "The person denied this tool call; it was not run."],
    ["expired", EXPIRED, "No one approved this tool call in time; it was not run."],
    [
      "cancelled",
      { outcome: "cancelled" } as AskAnswer,
      "The tool call was not approved (the request was cancelled); it was not run.",
    ],
  ])("does not run a call that was %s, and the model is told", async (_label, answer, told) => {
    server.respond(stream(CALL), stream(DONE));
    const ran: unknown[] = [];
    const result = await collect(
      rmRuntime((name, args) => name === "rm" && args.force === true, ran).turn(input("clean up", person(answer))),
    );
    expect(ran).toEqual([]);
    expect(result.events.find((e) => e.type === "tool-end")).toMatchObject({ name: "rm", ok: false, output: told });
    expect(server.requests[1].body.messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_1", content: told });
    expect(result.text).toBe("Done.");
  });

  it("runs a tool the rule does not name without asking", async () => {
    server.respond(
      stream(
        sse([
          chunk({
            tool_calls: [{ index: 0, id: "call_2", type: "function", function: { name: "ls", arguments: "{}" } }],
          }),
          chunk({}, {}, "tool_calls"),
        ]),
      ),
      stream(DONE),
    );
    const { asked, ask } = person(DENY);
    const result = await collect(rmRuntime(["rm"], []).turn(input("list", { ask })));
    expect(asked).toEqual([]);
    expect(result.events.find((e) => e.type === "tool-end")).toMatchObject({ name: "ls", ok: true, output: "a b" });
  });

  it("asks when the rule throws, rather than running the call unchecked", async () => {
    server.respond(stream(CALL), stream(DONE));
    const ran: unknown[] = [];
    const { asked, ask } = person(DENY);
    await collect(
      rmRuntime(() => {
        throw new Error("rule broke");
      }, ran).turn(input("x", { ask })),
    );
    expect(asked).toHaveLength(1);
    expect(ran).toEqual([]);
  });

  it("refuses a rule that is neither a list of names nor a function", () => {
    expect(() => rmRuntime("rm" as never, [])).toThrow(/needsApproval must be a list of tool names/);
  });
});

// ai 6: the stream parts a mock model sends for one step.
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;
function step(parts: unknown[], finish: "stop" | "tool-calls") {
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
  const chunks = [
    { type: "stream-start", warnings: [] },
    ...parts,
    { type: "finish", finishReason: { unified: finish, raw: finish }, usage },
  ];
  return { stream: simulateReadableStream<StreamPart>({ chunks: chunks as StreamPart[] }) };
}
const callRm = () =>
  step([{ type: "tool-call", toolCallId: "c1", toolName: "rm", input: '{"path":"/tmp/x"}' }], "tool-calls");
const answer = () =>
  step(
    [
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Done." },
      { type: "text-end", id: "t" },
    ],
    "stop",
  );

describe("ai-sdk (ai 6) - tool approval", () => {
  function rmTools(ran: unknown[], needsApproval?: boolean) {
    return {
      rm: tool({
        inputSchema: z.object({ path: z.string() }),
        ...(needsApproval === undefined ? {} : { needsApproval }),
        execute: async ({ path }) => {
          ran.push(path);
          return { removed: path };
        },
      }),
    };
  }

  it("a tool with needsApproval asks with its arguments and runs once approved", async () => {
    const ran: unknown[] = [];
    const { asked, ask } = person(APPROVE);
    const model = new MockLanguageModelV3({ doStream: [callRm(), answer()] });
    const result = await collect(aiSdkRuntime({ model, tools: rmTools(ran, true) }).turn(input("clean", { ask })));
    expect(result.error).toBeUndefined();
    expect(asked).toEqual([
      { kind: "approval", title: "Run rm?", body: "rm(path=/tmp/x)", tool: { name: "rm", args: { path: "/tmp/x" } } },
    ]);
    expect(ran).toEqual(["/tmp/x"]);
    expect(result.events.filter((e) => e.type === "tool-end")).toMatchObject([
      { name: "rm", ok: true, output: { removed: "/tmp/x" } },
    ]);
    expect(result.text).toBe("Done.");
  });

  it.each([
    ["denied", DENY, "The person denied this tool call; it was not run."],
    ["expired", EXPIRED, "No one approved this tool call in time; it was not run."],
  ])("a call %s does not run, and the model's next step is told so", async (_label, answer_, told) => {
    const ran: unknown[] = [];
    const model = new MockLanguageModelV3({ doStream: [callRm(), answer()] });
    const result = await collect(
      aiSdkRuntime({ model, tools: rmTools(ran, true) }).turn(input("clean", person(answer_))),
    );
    expect(ran).toEqual([]);
    expect(result.events.filter((e) => e.type === "tool-end")).toMatchObject([{ name: "rm", ok: false, output: told }]);
    expect(JSON.stringify(model.doStreamCalls[1].prompt.at(-1))).toContain(told);
    expect(result.text).toBe("Done.");
  });

  it("the needsApproval option gates a tool that does not say so itself", async () => {
    const ran: unknown[] = [];
    const { asked, ask } = person(DENY);
    const model = new MockLanguageModelV3({ doStream: [callRm(), answer()] });
    await collect(
      aiSdkRuntime({
        model,
        tools: rmTools(ran),
        needsApproval: (name, args) => name === "rm" && args.path === "/tmp/x",
      }).turn(input("clean", { ask })),
    );
    expect(asked.map((a) => a.kind)).toEqual(["approval"]);
    expect(ran).toEqual([]);
  });

  it("a tool whose needsApproval function says no runs without asking", async () => {
    const ran: unknown[] = [];
    const { asked, ask } = person(DENY);
    const tools = {
      rm: tool({
        inputSchema: z.object({ path: z.string() }),
        needsApproval: async ({ path }) => path.startsWith("/etc"),
        execute: async ({ path }) => {
          ran.push(path);
          return "ok";
        },
      }),
    };
    const model = new MockLanguageModelV3({ doStream: [callRm(), answer()] });
    await collect(aiSdkRuntime({ model, tools }).turn(input("clean", { ask })));
    expect(asked).toEqual([]);
    expect(ran).toEqual(["/tmp/x"]);
  });

  it("a streaming tool still streams after approval; its final output ends the call", async () => {
    const tools = {
      rm: tool({
        inputSchema: z.object({ path: z.string() }),
        needsApproval: true,
        async *execute() {
          yield "half";
          yield "all";
        },
      }),
    };
    const model = new MockLanguageModelV3({ doStream: [callRm(), answer()] });
    const result = await collect(aiSdkRuntime({ model, tools }).turn(input("clean", person(APPROVE))));
    expect(result.events.filter((e) => e.type === "tool-end")).toMatchObject([{ name: "rm", ok: true, output: "all" }]);
  });
});
