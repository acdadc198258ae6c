// A turn started through a door is the owner's turn everywhere: asked and answered on a WebSocket
// device, stopped from one, kept alive while it waits, and never stopped by a client that leaves.
import { describe, expect, test } from "vitest";
import OpenAI from "openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText } from "ai";
import type { RuntimeEvent, TurnInput } from "chat-gateway";
import { Client } from "../gateway/harness.js";
import { gate, scriptedRuntime } from "../gateway/runtimes.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

function openai(server: DoorServer): OpenAI {
  return new OpenAI({ baseURL: server.baseURL, apiKey: "k", maxRetries: 0 });
}

/** Streams "part one ", asks for approval, then "approved"/"denied" with what was chosen. */
function askingRuntime() {
  return scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    yield { type: "text", delta: "part one " };
    const answer = await input.ask({
      kind: "approval",
      title: "Run the tool?",
      tool: { name: "rm", args: { path: "/tmp/x" } },
    });
    yield { type: "text", delta: answer.option_id === "approve" ? "approved" : "denied" };
  });
}

/** Streams one piece, then waits for the test (or its signal) before the rest. */
function heldRuntime(held: { wait: Promise<void> }) {
  return scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    yield { type: "text", delta: "before " };
    await Promise.race([held.wait, new Promise((resolve) => input.signal.addEventListener("abort", resolve))]);
    if (!input.signal.aborted) yield { type: "text", delta: "after" };
  });
}

describe("a door's turn, live on every device", () => {
  test("its ask shows on a WebSocket device; answered there, the door's stream goes on", async () => {
    const server = await start({ runtime: askingRuntime() });
    const phone = await Client.connect(server.wsUrl, { caps: { pickers: true } });
    const stream = await openai(server).chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "do it" }],
      stream: true,
    });
    const answering = (async () => {
      const ask = await phone.waitFor((f) => f.type === "picker.approval");
      expect(ask.payload.title).toBe("Run the tool?");
      const resolved = await phone.request("picker.select", { picker_id: ask.payload.picker_id, option_id: "approve" });
      expect(resolved.type).toBe("picker.resolved");
    })();
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    await answering;
    expect(text).toBe("part one approved");
    const stop = await phone.waitFor((f) => f.type === "message.stop");
    expect(stop.payload.final_text).toBe("part one approved");
    await phone.close();
  });

  test("turn.stop from a WebSocket device ends the door's stream with finish_reason stop", async () => {
    const held = gate();
    const server = await start({ runtime: heldRuntime(held) });
    const phone = await Client.connect(server.wsUrl);
    const stream = await openai(server).chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "long" }],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.choices[0]?.delta.content === "before ") {
        const start = await phone.waitFor((f) => f.type === "message.start");
        const stopped = await phone.request("turn.stop", {
          chat_id: start.payload.chat_id,
          thread_id: start.payload.thread_id,
        });
        expect(stopped.payload.message_id).toBe(start.payload.message_id);
      }
    }
    held.release();
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("before ");
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe("stop");
    const stop = await phone.waitFor((f) => f.type === "message.stop");
    expect(stop.payload.status).toBe("stopped");
    await phone.close();
  });

  test("a stream that waits sends ': keep-alive' comments; a client that leaves does not stop the turn", async () => {
    const held = gate();
    const server = await start({ runtime: heldRuntime(held) }, { keepAliveMs: 30 });
    const phone = await Client.connect(server.wsUrl);
    const controller = new AbortController();
    const response = await fetch(`${server.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "wait" }], stream: true }),
      signal: controller.signal,
    });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    let seen = "";
    // The answer's first piece, then a comment while it waits (a busy machine may send one earlier too).
    const keptAlive = () =>
      seen.includes('"content":"before "') && seen.slice(seen.indexOf('"content":"before "')).includes(": keep-alive");
    while (!keptAlive()) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    expect(seen).toContain('"content":"before "');
    expect(seen).toContain(": keep-alive\n\n");
    controller.abort();
    await reader.cancel().catch(() => undefined);
    held.release();
    const stop = await phone.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({ status: "complete", final_text: "before after" });
    await phone.close();
  });

  test("the AI SDK's OpenAI-compatible provider streams a door's answer with streamText", async () => {
    const server = await start();
    const provider = createOpenAICompatible({
      name: "chat-gateway",
      baseURL: server.baseURL,
      apiKey: "k",
      includeUsage: true,
    });
    const result = streamText({ model: provider.chatModel("default"), prompt: "from the ai sdk" });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe("You said: from the ai sdk");
    expect(await result.finishReason).toBe("stop");
  });

  test("more door streams than the owner may have connections: the next is 429 with Retry-After", async () => {
    const held = gate();
    const server = await start({ runtime: heldRuntime(held), maxConnectionsPerOwner: 1 });
    const first = await fetch(`${server.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "one" }], stream: true }),
    });
    expect(first.status).toBe(200);
    const second = await fetch(`${server.baseURL}/models`);
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await second.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    held.release();
    await first.text();
  });
});
