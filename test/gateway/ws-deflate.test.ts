// The ws adapter's perMessageDeflate option: off unless asked for, bounded when on, and a
// compressed frame that would inflate past maxPayload closes the socket (1009) without effect.
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A client that asks for permessage-deflate; `agreed` is the server's Sec-WebSocket-Extensions answer. */
async function open(url: string): Promise<WebSocket & { agreed?: string }> {
  const ws: WebSocket & { agreed?: string } = new WebSocket(url, { perMessageDeflate: true });
  ws.once("upgrade", (response) => (ws.agreed = String(response.headers["sec-websocket-extensions"] ?? "")));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return ws;
}

describe("ws adapter compression", () => {
  it("ws deflate - off by default: a client asking for permessage-deflate gets plain frames", async () => {
    h = await startGateway();
    const ws = await open(h.url);
    expect(ws.agreed).toBe("");
    ws.close();
  });

  it("ws deflate - perMessageDeflate: true negotiates the bounded settings and streams answers compressed", async () => {
    h = await startGateway({}, { perMessageDeflate: true });
    const ws = await open(h.url);
    expect(ws.agreed).toMatch(/permessage-deflate/);
    expect(ws.agreed).toMatch(/server_max_window_bits=13/);
    ws.close();
    // A device with compression still gets every frame right.
    const device = await Client.connect(h.url);
    const { final } = await device.say({ chat_id: "default", text: "x".repeat(5000) });
    expect(final.payload.final_text).toBe(`You said: ${"x".repeat(5000)}`);
  });

  it("ws deflate - a compressed frame that inflates past maxPayload closes with 1009 and stores nothing", async () => {
    h = await startGateway({}, { perMessageDeflate: true, maxPayload: 64 * 1024 });
    const watcher = await Client.connect(h.url);
    const ws = await open(h.url);
    const closed = new Promise<number>((resolve) => ws.once("close", resolve));
    ws.send(JSON.stringify({ type: "hello", payload: { token: "", device_id: "bomb" } }));
    // 200 kB of one character, a few hundred bytes on the wire: past maxPayload once inflated,
    // though under the gateway's own 1 MiB frame limit.
    ws.send(JSON.stringify({ type: "message.send", payload: { chat_id: "default", text: "a".repeat(200_000) } }));
    expect(await closed).toBe(1009);
    const history = await watcher.request("history", { chat_id: "default" });
    expect(history.payload.messages).toEqual([]);
  });
});
