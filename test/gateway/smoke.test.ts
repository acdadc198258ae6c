import { afterEach, describe, expect, it } from "vitest";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => h?.close());

describe("gateway smoke", () => {
  it("hello, channel.list, a streamed turn with footer, history", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const hello = c.frames[0];
    expect(hello.type).toBe("hello.ok");
    expect(hello.payload).toMatchObject({
      protocol: 1,
      cursor: 0,
      user: null,
      streaming: true,
      limits: { history_max: 200, search_max: 100 },
    });
    const list = await c.request("channel.list", {});
    expect(list.payload.channels).toEqual([
      {
        chat_id: "default",
        name: "General",
        kind: "default",
        parent_chat_id: null,
        is_default: true,
        archived: false,
        unread: 0,
      },
    ]);
    const { echo, final } = await c.say({ chat_id: "default", text: "hello there", client_msg_id: "k1" });
    expect(echo.payload).toMatchObject({
      role: "user",
      text: "hello there",
      chat_id: "default",
      thread_id: null,
      client_msg_id: "k1",
    });
    expect(echo.seq).toBe(1);
    expect(final.type).toBe("message.stop");
    expect(final.payload.final_text).toBe("You said: hello there");
    expect(final.payload.runtime.model).toBe("demo");
    // The demo runtime declares its model, so the start of the stream already names it.
    expect(c.of("message.start")[0].payload).toMatchObject({ role: "assistant", model: "demo" });
    expect(final.payload).toMatchObject({ model: "demo", tokens: expect.any(Number) });
    expect(typeof final.payload.runtime.latency).toBe("number");
    const hist = await c.request("history", { chat_id: "default" });
    expect(hist.payload.messages.map((m: any) => m.role)).toEqual(["user", "assistant"]);
    expect(hist.payload.messages[1].runtime.model).toBe("demo");
  });
});
