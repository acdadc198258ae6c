import { describeAgentRuntimeConformance, type RuntimeScenario } from "chat-gateway/testing";
import { calculatorRuntime } from "../../examples/custom-runtime/runtime.js";

const text: Record<RuntimeScenario, string> = {
  answer: "hello",
  tool: "What is 2 + 3?",
  long: "count to 1000",
  fail: "What is 1 / 0?",
  title: "What is 2 + 3?",
};
describeAgentRuntimeConformance("examples/custom-runtime", (scenario) => ({
  runtime: calculatorRuntime({ delayMs: 5 }),
  text: text[scenario],
}));
