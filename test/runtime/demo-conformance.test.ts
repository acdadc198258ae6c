import { demoRuntime } from "chat-gateway/runtime/demo";
import { describeAgentRuntimeConformance } from "chat-gateway/testing";

const text = {
  answer: "hello there",
  tool: "tool: ping",
  long: "x".repeat(20_000),
  fail: "",
  title: "Plan a trip to Lisbon",
};
describeAgentRuntimeConformance(
  "demo",
  (scenario) => ({ runtime: demoRuntime({ delayMs: 5 }), text: text[scenario] }),
  { failures: false },
);
