// Crash recovery stores the final frame the gateway's streaming option calls for (docs/PROTOCOL.md
// §4.2): message.stop when streaming, an assistant message when not; the footer keeps the model.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const left = {
  message_id: "m-left",
  role: "assistant" as const,
  text: "half",
  reasoning: "",
  ts: 1,
  media: [],
  status: "streaming" as const,
  model: "demo",
  chat_id: "default",
  thread_id: null,
};

describe("recovery's final frame", () => {
  it("recovery - streaming off: the interrupted answer is stored as an assistant message, never message.stop", async () => {
    const storage = memoryStorage();
    await storage.commit(ANONYMOUS_OWNER, { messages: [left] });
    harness = await startGateway({ storage, streaming: false });
    const c = await Client.connect(harness.url);
    c.send("sync", { cursor: 0 }, "s");
    await c.waitFor((f) => f.type === "sync.done");
    expect(c.of("message.stop")).toEqual([]);
    const ended = c.frames.find((f) => f.type === "message" && f.payload.message_id === "m-left")!;
    expect(ended.payload).toMatchObject({
      role: "assistant",
      status: "interrupted",
      text: "half",
      runtime: { model: "demo" },
    });
  });

  it("recovery - streaming on: a message.stop whose runtime names the model", async () => {
    const storage = memoryStorage();
    await storage.commit(ANONYMOUS_OWNER, { messages: [left] });
    harness = await startGateway({ storage });
    const c = await Client.connect(harness.url);
    c.send("sync", { cursor: 0 }, "s");
    const stop = await c.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({
      message_id: "m-left",
      status: "interrupted",
      final_text: "half",
      runtime: { model: "demo" },
    });
  });
});
