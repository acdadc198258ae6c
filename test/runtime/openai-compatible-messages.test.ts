// What the OpenAI-compatible binding sends besides a turn's text and does without the model:
// attachments, titles, its own commands, and the configurations it refuses.
import { describe, expect, it } from "vitest";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { chunk, json, sse, stream } from "./fake-llm-server.js";
import { openAICompatibleHarness } from "./openai-compatible-harness.js";
import { collect, input } from "./turn-helpers.js";

const llm = openAICompatibleHarness();

describe("openai-compatible - messages, titles and commands", () => {
  it("describes attachments in text, or sends images when vision is on", async () => {
    const media = [
      { media_id: "img1", kind: "image" as const, mime: "image/png", size: 3, filename: "a.png" },
      { media_id: "doc1", kind: "document" as const, mime: "application/pdf", size: 10, filename: "b.pdf" },
    ];
    llm.server.respond(
      stream(sse([chunk({ content: "a" }, {}, "stop")])),
      stream(sse([chunk({ content: "b" }, {}, "stop")])),
    );
    const readMedia = async (id: string) => (id === "img1" ? new Uint8Array([1, 2, 3]) : new Uint8Array());
    const base = input("look", { readMedia });
    await collect(llm.runtime().turn({ ...base, message: { ...base.message, media } }));
    await collect(llm.runtime({ vision: true }).turn({ ...base, message: { ...base.message, media } }));
    expect(llm.server.requests[0].body.messages.at(-1)).toEqual({
      role: "user",
      content:
        "look\n[Attached image: a.png (image/png, 3 bytes)]\n[Attached document: b.pdf (application/pdf, 10 bytes)]",
    });
    expect(llm.server.requests[1].body.messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "text", text: "look\n[Attached document: b.pdf (application/pdf, 10 bytes)]" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AQID" } },
      ],
    });
  });

  it("generates a short title with a non-streaming call", async () => {
    llm.server.respond(
      json(200, {
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: '<think>hm</think>\n"Planning a Summer Trip to Paris and Lyon."' },
          },
        ],
      }),
    );
    const rt = llm.runtime({ titleModel: "tiny" });
    const title = await rt.generateTitle!(
      "I want to plan a trip to Paris and Lyon this summer",
      new AbortController().signal,
    );
    expect(title).toBe("Planning a Summer Trip to Paris");
    expect(llm.server.requests[0].body).toMatchObject({ model: "tiny", stream: false });
    expect(llm.server.requests[0].body.messages[1]).toEqual({
      role: "user",
      content: "I want to plan a trip to Paris and Lyon this summer",
    });
  });

  it("fails the title on an HTTP error and offers no title when disabled", async () => {
    llm.server.respond(json(503, { error: { message: "loading model" } }));
    await expect(llm.runtime().generateTitle!("x", new AbortController().signal)).rejects.toThrow(
      "The model server failed (HTTP 503): loading model",
    );
    expect(llm.runtime({ generateTitle: false }).generateTitle).toBeUndefined();
  });

  it("lists and answers its commands without calling the model", async () => {
    const rt = llm.runtime({ tools: { add: { description: "Adds", parameters: {}, execute: () => 0 } } });
    expect((await rt.commands!()).map((c) => c.name)).toEqual(["/models", "/tools"]);
    const run = async (command: string) => (await collect(rt.command!({ ...input(command), command, args: "" }))).text;
    expect(await run("/models")).toBe("Model: gpt-4o-mini");
    expect(await run("/tools")).toBe("- add: Adds");
    expect(llm.server.requests).toHaveLength(0);
  });

  it("refuses a bad configuration at construction", () => {
    expect(() => openAICompatibleRuntime({ baseUrl: "localhost:8080", model: "m" })).toThrow(TypeError);
    expect(() => openAICompatibleRuntime({ baseUrl: "http://x", model: "" })).toThrow(TypeError);
    expect(() => openAICompatibleRuntime({ baseUrl: "http://x", model: "m", maxSteps: 0 })).toThrow(TypeError);
    expect(() => openAICompatibleRuntime({ baseUrl: "http://x", model: "m", tools: { t: {} as never } })).toThrow(
      TypeError,
    );
  });
});
