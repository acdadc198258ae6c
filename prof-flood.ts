import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { Client, startGateway } from "./test/gateway/harness.js";
import { chunk, endless, sse, startFakeLlmServer } from "./test/runtime/fake-llm-server.js";
const llm = await startFakeLlmServer();
const h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }), maxAnswerChars: 150_000 });
const c = await Client.connect(h.url);
const other = await Client.connect(h.url);
llm.respond(endless((i) => sse(Array.from({ length: 200 }, (_, j) => chunk({ content: String((i + j) % 10) })), { done: false })));
const t0 = performance.now();
const echo = await c.request("message.send", { chat_id: "default", text: "x" });
let ended = false;
const done = c.waitFor((f) => f.type === "message.stop", 30000).then(() => (ended = true));
const lat: number[] = [];
while (!ended) { const s = performance.now(); await other.request("ping", {}); lat.push(performance.now() - s); await new Promise((r) => setTimeout(r, 20)); }
await done;
console.log("took", (performance.now() - t0).toFixed(0), "pings", lat.length, "max", Math.max(...lat).toFixed(1), "avg", (lat.reduce((a, b) => a + b) / lat.length).toFixed(1), "updates", c.of("message.update").length);
await h.close(); await llm.close(); process.exit(0);
