// The OpenAI-compatible binding stops when the turn's signal aborts: mid-stream, while a tool
// runs, or before it has called the server at all.
import { describe, expect, it } from "vitest";
import { chunk } from "./fake-llm-server.js";
import { openAICompatibleHarness, toolCallStep } from "./openai-compatible-harness.js";
import { collect, input } from "./turn-helpers.js";

const llm = openAICompatibleHarness();

describe("openai-compatible - abort", () => {
  it("stops promptly when the signal aborts, and the server sees the request closed", async () => {
    llm.server.respond((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "first" }))}\n\n`);
      // Then silence: only the abort can end this turn.
    });
    const controller = new AbortController();
    // The server never ends its stream and the silence timeout (60 s) outlasts the test's (20 s):
    // the turn returning at all proves the abort ended it, and the server saw the request closed.
    const { text, error } = await collect(
      llm.runtime({ timeoutMs: 60_000 }).turn(input("x", { signal: controller.signal })),
      (e) => {
        if (e.type === "text") controller.abort();
      },
    );
    expect(error).toBeUndefined();
    expect(text).toBe("first");
    await llm.server.requests[0].closedEarly;
  });

  it("stops waiting for a tool that ignores the signal", async () => {
    llm.server.respond(toolCallStep("c", "slow", "{}"));
    const controller = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const rt = llm.runtime({
      tools: {
        slow: {
          parameters: { type: "object" },
          execute: (_args, { signal }) => {
            toolSignal = signal;
            setTimeout(() => controller.abort(), 20);
            return new Promise(() => {});
          },
        },
      },
    });
    const { events, error } = await collect(rt.turn(input("x", { signal: controller.signal })));
    expect(error).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(["usage", "tool-start"]);
    expect(toolSignal?.aborted).toBe(true);
    expect(llm.server.requests).toHaveLength(1);
  });

  it("does not call the server when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const { events, error } = await collect(llm.runtime().turn(input("x", { signal: controller.signal })));
    expect(error).toBeUndefined();
    expect(events).toEqual([]);
    expect(llm.server.requests).toHaveLength(0);
  });
});
