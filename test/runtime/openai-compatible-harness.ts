// The OpenAI-compatible binding's tests: a fresh loopback model server for each test, the binding
// pointed at it, and the model's one-call answers the tests queue on it.
import { afterEach, beforeEach } from "vitest";
import { openAICompatibleRuntime, type OpenAICompatibleRuntimeOptions } from "chat-gateway/runtime/openai-compatible";
import { chunk, sse, startFakeLlmServer, stream, type FakeLlmServer, type Handler } from "./fake-llm-server.js";

/** What the tests of one file share: the current test's model server and the binding aimed at it. */
export interface OpenAICompatibleHarness {
  /** The current test's server; a test that closes it may put a new one here (closed after the test). */
  server: FakeLlmServer;
  /** The binding on the current server, model `gpt-4o-mini`, with `extra` options. */
  runtime(extra?: Partial<OpenAICompatibleRuntimeOptions>): ReturnType<typeof openAICompatibleRuntime>;
}

/** Starts a model server before each test of the calling file and closes it after. */
export function openAICompatibleHarness(): OpenAICompatibleHarness {
  const harness: OpenAICompatibleHarness = {
    server: undefined as unknown as FakeLlmServer,
    runtime: (extra = {}) =>
      openAICompatibleRuntime({ baseUrl: harness.server.baseUrl, model: "gpt-4o-mini", ...extra }),
  };
  beforeEach(async () => {
    harness.server = await startFakeLlmServer();
  });
  afterEach(async () => {
    await harness.server.close();
  });
  return harness;
}

/** A model step that calls one tool, whole in one chunk, and ends for the tool's result. */
export function toolCallStep(id: string, name: string, args: string): Handler {
  return stream(
    sse([
      chunk(
        { tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: args } }] },
        {},
        "tool_calls",
      ),
    ]),
  );
}
