// A model server that never ends what it sends, behind a real gateway: the binding's byte limits
// and the gateway's answer limit end the turn with a frame saying why, abort the model request,
// and keep memory and other connections' latency bounded.
import { afterEach, describe, expect, it } from "vitest";
import { openAICompatibleRuntime, type OpenAICompatibleRuntimeOptions } from "chat-gateway/runtime/openai-compatible";
import type { GatewayOptions } from "chat-gateway";
import { Client, startGateway, type Frame, type Harness } from "../gateway/harness.js";
import { chunk, endless, sse, startFakeLlmServer, stream, type FakeLlmServer } from "./fake-llm-server.js";

let h: Harness | undefined;
let llm: FakeLlmServer | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  h = undefined;
  llm = undefined;
});

const KiB = 1024;
const MiB = 1024 * KiB;

async function setup(
  runtimeOptions: Partial<OpenAICompatibleRuntimeOptions> = {},
  gatewayOptions: Partial<GatewayOptions> = {},
) {
  llm = await startFakeLlmServer();
  h = await startGateway({
    runtime: openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m", ...runtimeOptions }),
    ...gatewayOptions,
  });
  return { llm, c: await Client.connect(h.url) };
}

/** Sends a message and waits for its final frame, sampling the heap meanwhile. */
async function turn(c: Client, text: string, timeoutMs = 10_000): Promise<{ final: Frame; heapGrowth: number }> {
  const baseline = process.memoryUsage().heapUsed;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
  try {
    const from = c.frames.length;
    const echo = await c.request("message.send", { chat_id: "default", text });
    const final = await c.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id,
      timeoutMs,
      from,
    );
    await c.waitFor((f) => f.type === "typing" && f.payload.on === false, 2_000, from);
    return { final, heapGrowth: peak - baseline };
  } finally {
    clearInterval(sampler);
  }
}

/** The stored copy of a message, as history returns it. */
async function stored(c: Client, messageId: string): Promise<Record<string, any>> {
  const page = await c.request("history", { chat_id: "default" });
  return page.payload.messages.find((m: { message_id: string }) => m.message_id === messageId);
}

const before = sse([chunk({ role: "assistant", content: "Before the flood." })], { done: false });

describe("a hostile model server", () => {
  it("hostile model - an SSE line that never ends is cut at maxEventBytes: the turn says why, the request is aborted, memory stays flat", async () => {
    const { llm, c } = await setup({ maxEventBytes: 256 * KiB });
    const flood = endless(() => "a".repeat(64 * KiB), { head: `${before}data: {"choices":[{"delta":{"content":"` });
    llm.respond(flood);
    const { final, heapGrowth } = await turn(c, "hi");

    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(
      /^Before the flood\.\n\nThe agent failed: The model server sent a stream event \(or a line without end\) over the 256 KiB limit; the request was aborted/,
    );
    await llm.requests[0].closedEarly;
    expect(heapGrowth).toBeLessThan(32 * MiB);
    expect((await stored(c, final.payload.message_id)).text).toBe(final.payload.final_text);
  });

  it("hostile model - an event of many data lines that never ends is cut the same way", async () => {
    const { llm, c } = await setup({ maxEventBytes: 64 * KiB });
    llm.respond(endless(() => `data: ${"x".repeat(1000)}\n`.repeat(16), { head: before }));
    const { final } = await turn(c, "hi");
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(
      /over the 64 KiB limit; the request was aborted and the answer is incomplete$/,
    );
    await llm.requests[0].closedEarly;
  });

  it("hostile model - a stream of valid chunks that never ends is cut at maxResponseBytes", async () => {
    // Chunks without content: the gateway's answer limit never sees them, the body limit does.
    const { llm, c } = await setup({ maxResponseBytes: 2 * MiB });
    const flood = endless(
      () =>
        sse(
          Array.from({ length: 64 }, () => chunk({ role: "assistant" }, { padding: "p".repeat(800) })),
          { done: false },
        ),
      { head: before },
    );
    llm.respond(flood);
    const { final } = await turn(c, "hi");
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toBe(
      "Before the flood.\n\nThe agent failed: The model server's response passed the 2 MiB limit; the request was aborted and the answer is incomplete",
    );
    await llm.requests[0].closedEarly;
  });

  it("hostile model - a JSON answer that never ends is cut at maxResponseBytes, and so is an endless error body", async () => {
    const { llm, c } = await setup({ maxResponseBytes: 512 * KiB });
    llm.respond(
      endless(() => "a".repeat(16 * KiB), {
        contentType: "application/json",
        head: '{"choices":[{"message":{"content":"',
      }),
    );
    const { final } = await turn(c, "json");
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toBe(
      "The agent failed: The model server's response passed the 512 KiB limit; the request was aborted and the answer is incomplete",
    );
    await llm.requests[0].closedEarly;

    // Of an error body only the start is read; the status is what the user needs.
    llm.respond(endless(() => "overloaded ".repeat(1000), { status: 503, contentType: "text/plain" }));
    const failed = await turn(c, "error body");
    expect(failed.final.payload.final_text).toMatch(
      /^The agent failed: The model server failed \(HTTP 503\): overloaded overloaded .{0,300}$/,
    );
    await llm.requests[1].closedEarly;
  });

  it("hostile model - a 200 with an HTML page ends the turn saying what the server answered, not that the connection dropped, with no secret in it", async () => {
    const { llm, c } = await setup({ apiKey: "sk-secret-key-123" });
    const page = "<!doctype html><title>Model UI</title><p>a web UI, not the API</p>";
    llm.respond((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8; x=sk-secret-key-123" }).end(page);
    });
    const expected =
      "The agent failed: The model server answered text/html, not an event stream; check that the base URL is its API (often ending in /v1)";
    const { final } = await turn(c, "hi");
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toBe(expected);
    expect(final.payload.final_text).not.toContain("sk-secret");

    // A page that never ends is not read: the request is let go at once.
    llm.respond(endless(() => "<p>more</p>", { contentType: "text/html", head: "<!doctype html>" }));
    expect((await turn(c, "again")).final.payload.final_text).toBe(expected);
    await llm.requests[1].closedEarly;
  });

  it("hostile model - a title answer that never ends is cut at maxResponseBytes too", async () => {
    llm = await startFakeLlmServer();
    const runtime = openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m", maxResponseBytes: 64 * KiB });
    llm.respond(
      endless(() => "t".repeat(8 * KiB), {
        contentType: "application/json",
        head: '{"choices":[{"message":{"content":"',
      }),
    );
    await expect(runtime.generateTitle!("name this chat", new AbortController().signal)).rejects.toThrow(
      "The model server's response passed the 64 KiB limit",
    );
    await llm.requests[0].closedEarly;
  });

  it("hostile model - a title answered as an HTML page is refused saying what the server answered, unread; one naming no type is read", async () => {
    llm = await startFakeLlmServer();
    const runtime = openAICompatibleRuntime({ baseUrl: llm.baseUrl, model: "m", apiKey: "sk-secret-key-123" });
    const title = () => runtime.generateTitle!("name this chat", new AbortController().signal);
    const answer = JSON.stringify({ choices: [{ message: { content: "Injected title" } }] });
    const expected =
      "The model server answered text/html, not a JSON answer; check that the base URL is its API (often ending in /v1)";
    // Even a page whose text would parse as a title is not taken for one.
    llm.respond((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8; x=sk-secret-key-123" }).end(answer);
    });
    await expect(title()).rejects.toMatchObject({ code: "internal", message: expected });

    llm.respond(endless(() => "<p>more</p>", { contentType: "text/html", head: "<!doctype html>" }));
    await expect(title()).rejects.toMatchObject({ code: "internal", message: expected });
    await llm.requests[1].closedEarly;

    llm.respond((_req, res) => {
      res.writeHead(200).end(answer);
    });
    expect(await title()).toBe("Injected title");
  });

  it("hostile model - endless valid deltas are ended by the gateway's maxAnswerChars; a second device's pings are answered promptly meanwhile", {
    timeout: 90_000,
  }, async () => {
    const { llm, c } = await setup({}, { maxAnswerChars: 150_000 });
    const other = await Client.connect(h!.url);
    // Thousands of tiny deltas per write: the gateway handles every one of them.
    llm.respond(
      endless((i) =>
        sse(
          Array.from({ length: 200 }, (_, j) => chunk({ content: String((i + j) % 10) })),
          { done: false },
        ),
      ),
    );
    // Time enough for 150,000 one-character deltas on a machine busy with other test files.
    const sending = turn(c, "flood", 60_000);
    let ended = false;
    void sending.finally(() => (ended = true));
    await c.waitFor((f) => f.type === "message.update");
    const floodFrom = performance.now();

    const latencies: number[] = [];
    while (!ended) {
      const sent = performance.now();
      await other.request("ping", {});
      if (!ended) latencies.push(performance.now() - sent);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const { final } = await sending;
    const floodMs = performance.now() - floodFrom;

    // Unbounded, the flood froze the process (a ping waited about a second, most of the flood).
    // Measured against the flood's own length, which a busy machine stretches alike: pings are
    // answered all along, none waits a quarter of it.
    expect(latencies.length).toBeGreaterThan(3);
    expect(Math.max(...latencies)).toBeLessThan(floodMs / 4);
    expect(final.payload.status).toBe("error");
    const [answer, note] = final.payload.final_text.split("\n\n");
    expect(answer).toHaveLength(150_000);
    expect(note).toBe("The answer was cut off at the gateway's limit of 150,000 characters.");
    await llm.requests[0].closedEarly;
    for (const u of c.of("message.update")) expect(u.payload.text.length).toBeLessThanOrEqual(150_000);
    expect(await stored(c, final.payload.message_id)).toMatchObject({
      text: final.payload.final_text,
      status: "error",
    });
  });

  it("hostile model - endless 64 KiB deltas stop at the default answer limit; what a device receives stays bounded", async () => {
    const { llm, c } = await setup();
    const flood = endless(() => sse([chunk({ content: "z".repeat(64 * KiB) })], { done: false }));
    llm.respond(flood);
    const { final, heapGrowth } = await turn(c, "big deltas");
    expect(final.payload.final_text.split("\n\n")[0]).toHaveLength(262_144);
    expect(final.payload.final_text).toContain("cut off at the gateway's limit of 262,144 characters");
    await llm.requests[0].closedEarly;
    const received = c.of("message.update").reduce((sum, f) => sum + f.payload.text.length, 0);
    expect(received).toBeLessThan(16 * MiB);
    expect(heapGrowth).toBeLessThan(64 * MiB);
  });

  it("hostile model - events are counted one by one, whatever the line ends and however the bytes are split", async () => {
    // Each event is under 400 bytes, the whole stream far over it: only an unended event counts.
    const pieces = Array.from({ length: 10 }, (_, i) => chunk({ content: `${i},` }));
    const { llm, c } = await setup({ maxEventBytes: 400 });
    for (const ending of ["\n", "\r\n", "\r"]) {
      llm.respond(stream(sse(pieces).replaceAll("\n", ending), { pieceBytes: 7 }));
      const { final } = await turn(c, `ends with ${JSON.stringify(ending)}`);
      expect(final.payload).toMatchObject({ status: "complete", final_text: pieces.map((_, i) => `${i},`).join("") });
    }
  });

  it("hostile model - a tool call numbered 4294967294 ends the turn with an error at once; a second device is answered meanwhile", async () => {
    const { llm, c } = await setup({ tools: { clock: { parameters: { type: "object" }, execute: () => "noon" } } });
    const other = await Client.connect(h!.url);
    // 120 bytes that once froze the process for about 90 s while a sparse array was walked.
    llm.respond(
      stream(
        sse([chunk({ tool_calls: [{ index: 4294967294, id: "c", function: { name: "clock", arguments: "{}" } }] })]),
      ),
    );
    const { final } = await turn(c, "what time is it");
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toBe(
      "The agent failed: The model server sent a tool call numbered 4294967294; at most 128 calls (0 to 127) are taken from one model call",
    );
    expect((await other.request("ping", {})).type).toBe("pong");
    for (const index of [-1, 1.5, 128]) {
      llm.respond(
        stream(sse([chunk({ tool_calls: [{ index, id: "c", function: { name: "clock", arguments: "{}" } }] })])),
      );
      expect((await turn(c, `index ${index}`)).final.payload.final_text).toContain(
        `sent a tool call numbered ${index};`,
      );
    }
    // No call ran: the model was never asked again with a tool result.
    expect(llm.requests).toHaveLength(4);
  });

  it("hostile model - more than 128 tool calls in one model call end the turn; 128 are run", async () => {
    const calls = (n: number, by: "index" | "id") =>
      Array.from({ length: n }, (_, i) => ({
        ...(by === "index" ? { index: i } : {}),
        id: `c${i}`,
        function: { name: "clock", arguments: "{}" },
      }));
    let ran = 0;
    const { llm, c } = await setup({
      tools: { clock: { parameters: { type: "object" }, execute: () => String(++ran) } },
    });
    llm.respond(stream(sse([chunk({ tool_calls: calls(129, "index") })])));
    expect((await turn(c, "129 by index")).final.payload.final_text).toContain("sent a tool call numbered 128;");
    // Servers that send no index are bounded by the count of calls instead.
    llm.respond(stream(sse([chunk({ tool_calls: calls(129, "id") })])));
    const { final } = await turn(c, "129 by id");
    expect(final.payload.final_text).toBe(
      "The agent failed: The model server asked for more than 128 tool calls in one model call; the turn was ended",
    );
    expect(ran).toBe(0);
    llm.respond(stream(sse([chunk({ tool_calls: calls(128, "index") })])), stream(sse([chunk({ content: "done" })])));
    expect((await turn(c, "128")).final.payload).toMatchObject({ status: "complete", final_text: "done" });
    expect(ran).toBe(128);
  });

  it("hostile model - usage numbers that are not counts are left out, not summed", async () => {
    const { llm, c } = await setup();
    const usage = { prompt_tokens: -5, completion_tokens: 1e308, total_tokens: 2.5, cost: -1 };
    llm.respond(stream(sse([chunk({ content: "hi" }), { ...chunk({}), choices: [], usage }])));
    const { final } = await turn(c, "usage");
    expect(final.payload.status).toBe("complete");
    expect((await stored(c, final.payload.message_id)).tokens).toBeUndefined();
  });

  it("hostile model - byte limits must be whole positive numbers", () => {
    expect(() => openAICompatibleRuntime({ baseUrl: "http://127.0.0.1:1/v1", model: "m", maxEventBytes: 0 })).toThrow(
      TypeError,
    );
    expect(() =>
      openAICompatibleRuntime({ baseUrl: "http://127.0.0.1:1/v1", model: "m", maxResponseBytes: 1.5 }),
    ).toThrow(/maxResponseBytes must be a whole number of bytes/);
  });
});
