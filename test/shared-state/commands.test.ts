// Commands read as commands (docs/PROTOCOL.md §14.2): a gateway command's user message carries
// `command: true` on its echo, in history and in replays; other text never does.
import { afterEach, describe, expect, it } from "vitest";
import { Client, startGateway, type Harness } from "../gateway/harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("commands read as commands", () => {
  it("command - /help and /STOP carry command: true on the echo, in history and in sync; text and unknown commands do not", async () => {
    harness = await startGateway();
    const device = await Client.connect(harness.url);
    const help = await device.say({ chat_id: "default", text: "  /help" });
    expect(help.echo.payload.command).toBe(true);
    const plain = await device.say({ chat_id: "default", text: "hello /help" });
    expect(plain.echo.payload).not.toHaveProperty("command");
    const unknown = await device.say({ chat_id: "default", text: "/frobnicate" });
    expect(unknown.echo.payload).not.toHaveProperty("command");
    const stop = await device.request("message.send", { chat_id: "default", text: "/STOP" });
    expect(stop.payload.command).toBe(true);
    const page = await device.request("history", { chat_id: "default", limit: 50 });
    const byText = new Map(
      (page.payload.messages as Array<Record<string, any>>)
        .filter((m) => m.role === "user")
        .map((m) => [m.text, m.command]),
    );
    expect(Object.fromEntries(byText)).toEqual({
      "  /help": true,
      "hello /help": undefined,
      "/frobnicate": undefined,
      "/STOP": true,
    });
    // Answers never carry it.
    expect(
      (page.payload.messages as Array<Record<string, any>>)
        .filter((m) => m.role === "assistant")
        .some((m) => "command" in m),
    ).toBe(false);
    const late = await Client.connect(harness.url);
    late.send("sync", { cursor: 0 }, "s1");
    await late.waitFor((f) => f.type === "sync.done");
    const replayed = late.frames
      .filter((f) => f.type === "message" && f.payload.role === "user")
      .map((f) => [f.payload.text, f.payload.command]);
    expect(replayed).toEqual([
      ["  /help", true],
      ["hello /help", undefined],
      ["/frobnicate", undefined],
      ["/STOP", true],
    ]);
  });
});
