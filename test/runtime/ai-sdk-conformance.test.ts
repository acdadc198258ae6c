import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { jsonSchema, tool } from "ai";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { describeAgentRuntimeConformance } from "chat-gateway/testing";
import { addTool, scenarioServer } from "./fake-llm-scenarios.js";

const add = tool({
  description: addTool.description,
  inputSchema: jsonSchema<{ a: number; b: number }>(addTool.parameters as never),
  execute: async (input) => addTool.execute(input),
});

describeAgentRuntimeConformance("ai-sdk", async (scenario) => {
  const { server, cleanup } = await scenarioServer(scenario);
  const model = createOpenAICompatible({ name: "loopback", baseURL: server.baseUrl, includeUsage: true }).chatModel(
    "gpt-4o-mini",
  );
  return { runtime: aiSdkRuntime({ model, tools: { add }, streamTextOptions: { maxRetries: 0 } }), cleanup };
});
