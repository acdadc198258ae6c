// The OpenAI-compatible binding turns what goes wrong at the model server into a message a person
// can act on, keeping the text that arrived; its timeouts count the server's silence only, and its
// request options never turn streaming off.
import { describe, expect, it } from "vitest";
import { isGatewayError } from "chat-gateway/protocol";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { chunk, json, sse, startFakeLlmServer, stream } from "./fake-llm-server.js";
import { openAICompatibleHarness } from "./openai-compatible-harness.js";
import { collect, input } from "./turn-helpers.js";

const llm = openAICompatibleHarness();

describe("openai-compatible - failures", () => {
  async function failure(rt = llm.runtime()) {
    const result = await collect(rt.turn(input("x")));
    expect(result.error).toBeInstanceOf(Error);
    expect(isGatewayError(result.error)).toBe(true);
    return { ...result, message: (result.error as Error).message, code: (result.error as { code: string }).code };
  }

  it("says the API key was refused on 401", async () => {
    llm.server.respond(
      json(401, { error: { message: "Incorrect API key provided: sk-bad", type: "invalid_request_error" } }),
    );
    const { message } = await failure();
    expect(message).toMatch(/^The model server refused the API key \(HTTP 401\)/);
  });

  it("says when to retry on 429 with Retry-After", async () => {
    llm.server.respond(json(429, { error: { message: "slow down" } }, { "retry-after": "20" }));
    const { message, code } = await failure();
    expect(message).toMatch(/^Rate limited by the model server; retry after 20 s/);
    expect(code).toBe("rate_limited");
  });

  it("reports a server error with the server's message", async () => {
    llm.server.respond(json(500, { error: { message: "CUDA out of memory" } }));
    const { message } = await failure();
    expect(message).toBe("The model server failed (HTTP 500): CUDA out of memory");
  });

  it("keeps the text that arrived before a connection dropped mid-stream", async () => {
    llm.server.respond(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "partial " }))}\n\n`);
      await new Promise((r) => setTimeout(r, 30));
      res.socket?.destroy();
    });
    const { text, message } = await failure();
    expect(text).toBe("partial ");
    expect(message).toMatch(/dropped mid-answer/);
  });

  it("treats a clean end of stream without [DONE] or a finish reason as dropped", async () => {
    llm.server.respond(stream(sse([chunk({ content: "half" })], { done: false })));
    const { text, message } = await failure();
    expect(text).toBe("half");
    expect(message).toMatch(/dropped mid-answer/);
  });

  it("keeps the text before a malformed chunk and names the chunk", async () => {
    llm.server.respond(
      stream(`data: ${JSON.stringify(chunk({ content: "ok " }))}\n\ndata: {"choices": [oops\n\ndata: [DONE]\n\n`),
    );
    const { text, message } = await failure();
    expect(text).toBe("ok ");
    expect(message).toMatch(/^The model server sent a malformed stream chunk: \{"choices": \[oops/);
  });

  it("reports an error the server sends mid-stream", async () => {
    llm.server.respond(
      stream(sse([chunk({ content: "a" }), { error: { message: "Provider returned error", code: 502 } }])),
    );
    const { text, message } = await failure();
    expect(text).toBe("a");
    expect(message).toBe("The model server reported an error: Provider returned error");
  });

  it("says the server cannot be reached", async () => {
    const url = llm.server.baseUrl;
    await llm.server.close();
    const { message } = await failure(openAICompatibleRuntime({ baseUrl: url, model: "m" }));
    expect(message).toMatch(/^Could not reach the model server at http:\/\/127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\)/);
    // A key in the URL's user, password or query is not shown.
    const keyed = `${url.replace("http://", "http://me:sk-secret@")}?key=sk-secret`;
    const hidden = await failure(openAICompatibleRuntime({ baseUrl: keyed, model: "m" }));
    expect(hidden.message).toMatch(/^Could not reach the model server at http:\/\/127\.0\.0\.1:\d+\/v1 \(/);
    expect(hidden.message, hidden.message).not.toContain("sk-secret");
    llm.server = await startFakeLlmServer();
  });

  it("times out when the server does not answer", async () => {
    llm.server.respond(() => {
      // Never answers.
    });
    const { message } = await failure(llm.runtime({ timeoutMs: 150 }));
    expect(message).toBe("The model server did not answer within 0.2 s");
  });

  it("times out when the stream goes silent, keeping the text so far", async () => {
    llm.server.respond((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "so far" }))}\n\n`);
    });
    const { text, message } = await failure(llm.runtime({ timeoutMs: 200 }));
    expect(text).toBe("so far");
    // The server never ends this stream: only the silence timeout ends the turn, as the message
    // says, and it dropped the request.
    expect(message).toBe("The model server stopped sending for 0.2 s; the answer is incomplete");
    await llm.server.requests[0].closedEarly;
  });
});

describe("openai-compatible - timeouts and request options", () => {
  it("does not count a slow consumer against the server's timeout", async () => {
    llm.server.respond(
      stream(sse([chunk({ content: "a" }), chunk({ content: "b" }, {}, "stop")]), { pieceBytes: 40, delayMs: 5 }),
    );
    let text = "";
    let error: unknown;
    try {
      for await (const event of llm.runtime({ timeoutMs: 100 }).turn(input("x"))) {
        if (event.type !== "text") continue;
        text += event.delta;
        // The consumer is slow (a storage write, a slow socket); the server is not.
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } catch (e) {
      error = e;
    }
    expect(error).toBeUndefined();
    expect(text).toBe("ab");
  });

  it("lets body drop stream_options for servers that reject it, but never turns streaming off", async () => {
    llm.server.respond(stream(sse([chunk({ content: "a" }, {}, "stop")])));
    await collect(llm.runtime({ body: { stream_options: undefined, stream: false, max_tokens: 50 } }).turn(input("x")));
    expect(llm.server.requests[0].body).not.toHaveProperty("stream_options");
    expect(llm.server.requests[0].body).toMatchObject({ stream: true, max_tokens: 50 });
  });
});
