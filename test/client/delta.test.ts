// The typed client with delta updates (docs/PROTOCOL.md §12): it declares caps.delta, applies the
// appends a real gateway sends, and refuses an append that does not fit what it holds.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import type { RuntimeEvent } from "chat-gateway";
import type { GatewayClient, MessageUpdatePayload } from "chat-gateway/client";
import { startGateway, type Harness } from "../gateway/harness.js";
import { scriptedRuntime, sleep } from "../gateway/runtimes.js";
import { recordingClient, until } from "./helpers.js";

let h: Harness | undefined;
const clients: GatewayClient[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await h?.close();
  h = undefined;
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

const ANSWER = "Streaming 🚀 answers, 日本語 too, and 👨‍👩‍👧 families. ".repeat(10);

function client(url: string, delta?: boolean) {
  const recorded = recordingClient({ url, deviceId: `d-${Math.random()}`, ...(delta === undefined ? {} : { delta }) });
  clients.push(recorded.client);
  const updates: MessageUpdatePayload[] = [];
  recorded.client.on("message.update", (p) => updates.push(p));
  return { ...recorded, updates };
}

describe("typed client, delta updates", () => {
  it("client delta - declares caps.delta, applies the appends and hands every handler the whole text", async () => {
    h = await startGateway({
      updateIntervalMs: 1,
      deltaUpdateIntervalMs: 0,
      runtime: scriptedRuntime(async function* () {
        // 3 UTF-16 units a chunk: emoji pairs are split across chunks.
        for (let i = 0; i < ANSWER.length; i += 3) {
          yield { type: "text", delta: ANSWER.slice(i, i + 3) } as RuntimeEvent;
          if (i % 30 === 0) await sleep(1);
        }
        // Long enough for the last update to go out before the stop.
        await sleep(30);
      }),
    });
    const delta = client(h.url);
    const full = client(h.url, false);
    const hello = await delta.client.connect();
    await full.client.connect();
    expect(hello.features).toContain("delta");
    await delta.client.ready();
    await full.client.ready();
    const echo = await delta.client.sendMessage({ chat_id: "default", text: "go" });
    const stop = await until(
      () =>
        delta.frames.find(
          (f) => f.type === "message.stop" && (f.payload as { reply_to?: string }).reply_to === echo.message_id,
        ),
      "stop",
    );
    await until(() => full.frames.some((f) => f.type === "message.stop"), "stop on the full-text client");

    expect(delta.updates.length).toBeGreaterThan(5);
    // On the wire these were appends; the event carries the whole text.
    expect(delta.updates.every((u) => typeof u.offset === "number" && typeof u.append === "string")).toBe(true);
    for (const u of delta.updates) expect(ANSWER.startsWith(u.text)).toBe(true);
    expect(delta.updates.at(-1)!.text).toBe((stop.payload as { final_text: string }).final_text);
    expect(delta.updates.at(-1)!.text).toBe(ANSWER);

    expect(full.updates.length).toBeGreaterThan(5);
    expect(full.updates.every((u) => u.offset === undefined)).toBe(true);
    expect(full.updates.at(-1)!.text).toBe(ANSWER);
  });

  it("client delta - an append whose offset does not fit is dropped and reported, and the answer is whole again from message.stop", async () => {
    // A gateway that gets offsets wrong, played by a small ws server: every frame is of the right
    // shape, only the offsets do not add up.
    const server = http.createServer();
    servers.push(server);
    const wss = new WebSocketServer({ server });
    const lane = { chat_id: "default", thread_id: null };
    wss.on("connection", (ws) => {
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as {
          type: string;
          id?: string;
          payload: { caps?: { delta?: boolean } };
        };
        const send = (type: string, payload: object, id?: string) =>
          ws.send(JSON.stringify({ type, ...(id ? { id } : {}), payload }));
        if (frame.type === "hello") {
          if (frame.payload.caps?.delta !== true) return ws.close(4000, "expected caps.delta");
          send(
            "hello.ok",
            {
              protocol: 1,
              cursor: 0,
              user: null,
              streaming: true,
              limits: { max_frame_bytes: 1 << 20, max_media_bytes: 1 << 20, history_max: 100, search_max: 50 },
              features: ["delta"],
            },
            frame.id,
          );
        } else if (frame.type === "sync") {
          send("sync.done", { cursor: 0 }, frame.id);
          send("message.start", { message_id: "m1", role: "assistant", ...lane });
          send("message.update", { message_id: "m1", offset: 0, append: "Hello", ...lane });
          send("message.update", { message_id: "m1", offset: 9, append: " lost", ...lane });
          send("message.update", { message_id: "m1", offset: 10, append: " also dropped", ...lane });
          send("message.stop", {
            message_id: "m1",
            final_text: "Hello world",
            reasoning: "",
            runtime: {},
            ts: 1,
            media: [],
            status: "complete",
            ...lane,
          });
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { client: c, updates, frames } = client(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const gaps: string[] = [];
    c.on("stream.gap", (id) => gaps.push(id));
    await c.connect();
    await until(() => frames.some((f) => f.type === "message.stop"), "stop");
    expect(updates.map((u) => u.text)).toEqual(["Hello"]);
    expect(gaps).toEqual(["m1", "m1"]);
  });
});
