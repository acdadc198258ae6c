import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { describeAgentRuntimeConformance } from "chat-gateway/testing";
import { addTool, scenarioServer } from "./fake-llm-scenarios.js";

describeAgentRuntimeConformance("openai-compatible", async (scenario) => {
  const { server, cleanup } = await scenarioServer(scenario);
  return {
    runtime: openAICompatibleRuntime({ baseUrl: server.baseUrl, model: "gpt-4o-mini", tools: { add: addTool } }),
    cleanup,
  };
});
