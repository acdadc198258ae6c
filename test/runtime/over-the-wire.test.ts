// A real binding behind a real gateway: what a phone sees when the model streams, calls a tool
// that throws, fails mid-stream, or is stopped.
import { afterEach, describe, expect, it } from "vitest";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { chunk, json, sse, startFakeLlmServer, stream, type FakeLlmServer } from "./fake-llm-server.js";

let h: Harness | undefined;
let llm: FakeLlmServer | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  h = undefined;
  llm = undefined;
});

const usage = (prompt: number, completion: number) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "openai/gpt-4o-mini", choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });

describe("openai-compatible over the wire", () => {
  it("over the wire - reasoning, a tool that throws (ok false), the turn goes on, footer from usage", async () => {
    llm = await startFakeLlmServer();
    llm.respond(
      stream(sse([
        chunk({ role: "assistant", reasoning_content: "I should look it up. " }),
        chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "lookup", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Lisbon"}' } }] }, {}, "tool_calls"),
        usage(100, 10),
      ])),
      stream(sse([chunk({ content: "The lookup failed, " }), chunk({ content: "but Lisbon is sunny." }, {}, "stop"), usage(150, 12)]), { pieceBytes: 7, delayMs: 5 }),
    );
    const runtime = openAICompatibleRuntime({
      baseUrl: llm.baseUrl,
      model: "openai/gpt-4o-mini",
      contextWindow: 1000,
      tools: { lookup: { description: "Look up weather", parameters: { type: "object", properties: { city: { type: "string" } } }, execute: async () => { throw new Error("weather service down"); } } },
    });
    h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "weather?" });
    const start = c.of("tool.start")[0];
    const end = c.of("tool.end")[0];
    expect(start.payload).toMatchObject({ index: 0, name: "lookup", args: { city: "Lisbon" } });
    expect(end.payload).toMatchObject({ index: 0, name: "lookup", ok: false });
    expect(JSON.stringify(end.payload.output)).toContain("weather service down");
    expect(final.payload).toMatchObject({ status: "complete", reasoning: "I should look it up. ", model: "gpt-4o-mini", tokens: 272 });
    expect(final.payload.final_text).toContain("but Lisbon is sunny.");
    expect(final.payload.runtime).toMatchObject({ model: "gpt-4o-mini", context_pct: 15 });
    // the model got the tool's error as the tool result
    expect(JSON.stringify(llm.requests[1].body.messages)).toContain("weather service down");
  });

  it("over the wire - an HTTP 429 ends the turn with a clear message, the runtime object and typing off", async () => {
    llm = await startFakeLlmServer();
    llm.respond(json(429, { error: { message: "slow down" } }, { "retry-after": "20" }));
    h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }) });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "hi" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(/rate limited.*20 s/i);
    expect(final.payload.runtime).toHaveProperty("latency");
    expect(c.of("typing").at(-1)!.payload.on).toBe(false);
  });

  it("over the wire - a connection dropped mid-stream keeps what arrived and says so", async () => {
    llm = await startFakeLlmServer();
    llm.respond(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse([chunk({ content: "Half of it" })], { done: false }));
      setTimeout(() => res.socket?.destroy(), 30);
    });
    h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }) });
    const c = await Client.connect(h.url);
    const { final } = await c.say({ chat_id: "default", text: "hi" });
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text.startsWith("Half of it")).toBe(true);
  });

  it("over the wire - /stop aborts the model request", async () => {
    llm = await startFakeLlmServer();
    llm.respond(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse([chunk({ content: "Thinking for a long time" })], { done: false }));
    });
    h = await startGateway({ runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m" }) });
    const c = await Client.connect(h.url);
    await c.request("message.send", { chat_id: "default", text: "long" });
    await c.waitFor((f) => f.type === "message.update");
    await c.request("message.send", { chat_id: "default", text: "/stop" });
    const stop = await c.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({ status: "stopped", final_text: "Thinking for a long time" });
    await llm.requests[0].closedEarly;
  });
});
