// The conformance suite's scenarios as OpenAI chat-completion responses of the loopback model
// server: what the OpenAI-compatible binding and the AI SDK's openai-compatible provider receive.
import type { RuntimeScenario } from "chat-gateway/testing";
import {
  chunk,
  endless,
  json,
  sse,
  startFakeLlmServer,
  stream,
  type FakeLlmServer,
  type Handler,
} from "./fake-llm-server.js";

const usage = (prompt: number, completion: number) => ({
  ...chunk({}),
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

const toolCall = sse([
  chunk({
    role: "assistant",
    content: null,
    tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "add", arguments: "" } }],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":2,"b":3}' } }] }),
  chunk({}, {}, "tool_calls"),
  usage(40, 10),
]);

const answer = (text: string) =>
  sse([
    chunk({ role: "assistant", content: "" }),
    ...text.split(/(?<= )/).map((word) => chunk({ content: word })),
    chunk({}, {}, "stop"),
    usage(60, 8),
  ]);

/** What the model server answers, request by request, in each scenario. */
const RESPONSES: Record<RuntimeScenario, () => Handler[]> = {
  answer: () => [stream(answer("2 + 3 is 5."), { pieceBytes: 17 })],
  tool: () => [stream(toolCall), stream(answer("The tool says 5."))],
  long: () => [
    endless((i) => `data: ${JSON.stringify(chunk({ content: `word${i} ` }))}\n\n`, {
      head: `data: ${JSON.stringify(chunk({ role: "assistant", content: "" }))}\n\n`,
    }),
  ],
  // Three times: a client that retries a server error gets the same answer each time.
  fail: () => [0, 1, 2].map(() => json(500, { error: { message: "the model crashed" } })),
  title: () => [
    json(200, {
      choices: [{ index: 0, message: { role: "assistant", content: "Trip to Lisbon in May" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 },
    }),
  ],
};

/** A loopback model server set up for `scenario`, and its clean-up for the suite. */
export async function scenarioServer(
  scenario: RuntimeScenario,
): Promise<{ server: FakeLlmServer; cleanup: () => Promise<void> }> {
  const server = await startFakeLlmServer();
  server.respond(...RESPONSES[scenario]());
  return { server, cleanup: () => server.close() };
}

/** The tool the scenarios call: adds two numbers. */
export const addTool = {
  description: "Adds two numbers",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  execute: ({ a, b }: Record<string, unknown>) => ({ sum: (a as number) + (b as number) }),
};
