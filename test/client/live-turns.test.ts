// The typed client holds the shared state (docs/PROTOCOL.md §14): a client that connects mid-turn
// has the running answer and the lane's queue at once, follows them live, and stops the turn.
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AgentRuntime } from "chat-gateway";
import { createGatewayClient, type GatewayClient } from "chat-gateway/client";
import { startGateway, type Harness } from "../gateway/harness.js";
import { until } from "./helpers.js";

let harness: Harness | undefined;
const clients: GatewayClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await harness?.close();
  harness = undefined;
});

const slow: AgentRuntime = {
  async *turn(input) {
    yield { type: "tool-start", id: "t", name: "think", args: { hard: true } };
    for (const word of input.message.text.split(" ")) {
      if (input.signal.aborted) return;
      await new Promise((r) => setTimeout(r, 30));
      yield { type: "text", delta: `${word} ` };
    }
  },
};

function client(url: string): GatewayClient {
  const c = createGatewayClient({ url, WebSocket: WebSocket as never, pingIntervalMs: 0 });
  clients.push(c);
  return c;
}

describe("typed client - shared state", () => {
  it("client - a late client sees the running answer, its tool and the queue; stop() stops it and names it", async () => {
    harness = await startGateway({ runtime: slow });
    const lane = { chat_id: "default", thread_id: null };
    const first = client(harness.url);
    await first.connect();
    await first.sendMessage({ chat_id: "default", text: Array.from({ length: 80 }, (_, i) => `w${i}`).join(" ") });
    const waiting = await first.sendMessage({ chat_id: "default", text: "later" });
    await until(() => first.runningTurns(lane)[0]?.text.length > 10, "text on the first client");

    const late = client(harness.url);
    const queues: string[][] = [];
    late.on("queues", () => queues.push(late.laneQueue(lane)));
    await late.connect();
    const running = await until(() => late.runningTurns(lane)[0], "the running answer on the late client");
    expect(running.tools.map((t) => t.name)).toEqual(["think"]);
    await until(() => late.runningTurns(lane)[0]?.text.startsWith("w0 w1"), "its text so far");
    await until(() => late.laneQueue(lane).length === 1, "the queue");
    expect(late.laneQueue(lane)).toEqual([waiting.message_id]);

    const stopped = await late.stop(lane);
    expect(stopped).toBe(running.message_id);
    // The waiting message runs next and leaves the queue; when it ends nothing is running.
    await until(
      () => late.laneQueue(lane).length === 0 && late.runningTurns(lane).length === 0,
      "the queue drained",
      10_000,
    );
    expect(queues.at(-1)).toEqual([]);
    expect(await late.stop(lane)).toBeNull();
  });

  it("client - a late client holds the running answer's finished tools with their outcome, and the running one without", async () => {
    const tooled: AgentRuntime = {
      async *turn(input) {
        yield { type: "tool-start", id: "a", name: "search", args: { q: "cats" } };
        yield { type: "tool-end", id: "a", output: "3 hits", ok: true, duration: 0.25 };
        yield { type: "tool-start", id: "b", name: "fetch", args: { url: "http://x" } };
        yield { type: "text", delta: "Working" };
        while (!input.signal.aborted) await new Promise((r) => setTimeout(r, 20));
      },
    };
    harness = await startGateway({ runtime: tooled });
    const lane = { chat_id: "default", thread_id: null };
    const first = client(harness.url);
    await first.connect();
    await first.sendMessage({ chat_id: "default", text: "go" });
    await until(() => first.runningTurns(lane)[0]?.text === "Working", "the answer on the first client");
    // The first client saw the tools live; the late one only from the join snapshot: both hold the same.
    const late = client(harness.url);
    await late.connect();
    await until(() => late.runningTurns(lane)[0]?.tools.length === 2, "both tools on the late client");
    for (const c of [first, late]) {
      expect(c.runningTurns(lane)[0].tools).toEqual([
        {
          index: 0,
          name: "search",
          preview: expect.any(String),
          args: { q: "cats" },
          output: "3 hits",
          ok: true,
          duration: 0.25,
        },
        { index: 1, name: "fetch", preview: expect.any(String), args: { url: "http://x" } },
      ]);
    }
    await late.stop(lane);
  });

  it("client - sendMessage with whenBusy interrupt runs next", async () => {
    harness = await startGateway({ runtime: slow });
    const c = client(harness.url);
    await c.connect();
    const stops: Array<{ reply_to?: string; status: string }> = [];
    c.on("message.stop", (p) => stops.push({ reply_to: p.reply_to, status: p.status }));
    const long = await c.sendMessage({
      chat_id: "default",
      text: Array.from({ length: 80 }, (_, i) => `w${i}`).join(" "),
    });
    await until(() => c.runningTurns().length === 1, "running");
    const urgent = await c.sendMessage({ chat_id: "default", text: "now" }, { whenBusy: "interrupt" });
    await until(() => stops.length === 2, "both ends", 10_000);
    expect(stops).toEqual([
      { reply_to: long.message_id, status: "stopped" },
      { reply_to: urgent.message_id, status: "complete" },
    ]);
  });
});
