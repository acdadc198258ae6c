// Tool approval through a real gateway: the binding's ask reaches a device as picker.approval with
// the full arguments, and the device's picker.select decides whether the tool runs.
import { afterEach, describe, expect, it } from "vitest";
import { tool } from "ai";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { z } from "zod";
import { createGatewayClient, type GatewayClient, type MessageStopPayload } from "chat-gateway/client";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import type { AgentRuntime } from "chat-gateway";
import { startGateway, type Harness } from "../gateway/harness.js";
import { until } from "../client/helpers.js";
import { chunk, sse, startFakeLlmServer, stream, type FakeLlmServer } from "./fake-llm-server.js";

let h: Harness | undefined;
let llm: FakeLlmServer | undefined;
let device: GatewayClient | undefined;
afterEach(async () => {
  device?.close();
  await h?.close();
  await llm?.close();
  h = llm = device = undefined;
});

/** A gateway around `runtime` and one device with pickers; `answer` picks the option of the approval it sees. */
async function approveOnce(runtime: AgentRuntime, answer: "approve" | "deny") {
  h = await startGateway({ runtime });
  device = createGatewayClient({ url: h.url, deviceId: "phone", reconnect: false, pingIntervalMs: 0 });
  await device.connect();
  await device.ready();
  const stopped = new Promise<MessageStopPayload>((resolve) => device!.on("message.stop", resolve));
  await device.sendMessage({ chat_id: "default", text: "clean up" });
  const ask = await until(() => device!.openAsks().find((a) => a.kind === "approval"), "the approval card");
  const resolved = await device.select(ask.picker_id, { option_id: answer });
  return { ask, resolved, final: await stopped };
}

describe("tool approval over the wire", () => {
  const CALL = sse([
    chunk({
      role: "assistant",
      content: null,
      tool_calls: [
        { index: 0, id: "call_1", type: "function", function: { name: "rm", arguments: '{"path":"/tmp/build"}' } },
      ],
    }),
    chunk({}, {}, "tool_calls"),
  ]);
  const DONE = sse([chunk({ content: "All done." }), chunk({}, {}, "stop")]);

  it.each([
    ["approve", ["/tmp/build"], true],
    ["deny", [], false],
  ] as const)("openai-compatible: %s on the device decides whether the tool runs", async (answer, expectedRuns, ok) => {
    llm = await startFakeLlmServer();
    llm.respond(stream(CALL), stream(DONE));
    const ran: unknown[] = [];
    const runtime = openAICompatibleRuntime({
      baseUrl: llm.baseUrl,
      model: "m",
      needsApproval: ["rm"],
      tools: {
        rm: {
          parameters: { type: "object" },
          execute: ({ path }) => {
            ran.push(path);
            return "removed";
          },
        },
      },
    });
    const { ask, resolved, final } = await approveOnce(runtime, answer);
    expect(ask).toMatchObject({
      kind: "approval",
      title: "Run rm?",
      tool: { name: "rm", args: { path: "/tmp/build" } },
      options: [{ id: "approve" }, { id: "deny" }],
    });
    expect(resolved).toMatchObject({ outcome: "selected", option_id: answer, device_id: "phone" });
    expect(ran).toEqual(expectedRuns);
    expect(final.final_text).toContain("All done.");
    const toolResult = llm.requests[1].body.messages.at(-1);
    expect(toolResult).toMatchObject({ role: "tool", tool_call_id: "call_1" });
    expect(toolResult.content).toBe(ok ? "removed" : "The person denied this tool call; it was not run.");
  });

  it("an approval card shows at most 64 KiB of the call's arguments and says when they were cut", async () => {
    const content = "é".repeat(100_000);
    const args = { path: "/tmp/notes", content, mode: "append" };
    llm = await startFakeLlmServer();
    const call = chunk({
      role: "assistant",
      content: null,
      tool_calls: [
        { index: 0, id: "call_1", type: "function", function: { name: "write", arguments: JSON.stringify(args) } },
      ],
    });
    llm.respond(stream(sse([call, chunk({}, {}, "tool_calls")])), stream(DONE));
    const written: unknown[] = [];
    const runtime = openAICompatibleRuntime({
      baseUrl: llm.baseUrl,
      model: "m",
      needsApproval: ["write"],
      tools: {
        write: {
          parameters: { type: "object" },
          execute: (a) => {
            written.push(a);
            return "ok";
          },
          preview: ({ path }) => `write to ${path}`,
        },
      },
    });
    const { ask } = await approveOnce(runtime, "approve");
    const shown = ask.tool as { name: string; args: Record<string, string>; args_cut?: boolean };
    expect(shown).toMatchObject({ name: "write", args_cut: true, args: { path: "/tmp/notes" } });
    expect(Buffer.byteLength(JSON.stringify(shown.args))).toBeLessThanOrEqual(64 * 1024);
    expect(Buffer.byteLength(JSON.stringify(shown.args))).toBeGreaterThan(60 * 1024);
    expect(shown.args.content).toMatch(/^é+…$/);
    expect(shown.args).not.toHaveProperty("mode");
    expect(ask.body).toBe(
      "write to /tmp/notes\n\nThe call's arguments are 196 KiB of JSON; only the first 64 KiB are shown.",
    );
    // The stored card a later device syncs is just as bounded.
    const page = await device!.request("sync", { cursor: 0 });
    expect(JSON.stringify(page).length).toBeLessThan(200 * 1024);
    expect(written).toEqual([args]);
  });

  it("ai-sdk: a needsApproval tool waits for the device and runs once approved", async () => {
    type StreamPart =
      Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const step = (parts: unknown[], finish: string) => ({
      stream: simulateReadableStream<StreamPart>({
        chunks: [
          { type: "stream-start", warnings: [] },
          ...parts,
          { type: "finish", finishReason: { unified: finish, raw: finish }, usage },
        ] as StreamPart[],
      }),
    });
    const model = new MockLanguageModelV3({
      doStream: [
        step([{ type: "tool-call", toolCallId: "c1", toolName: "rm", input: '{"path":"/tmp/build"}' }], "tool-calls"),
        step(
          [
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "All done." },
            { type: "text-end", id: "t" },
          ],
          "stop",
        ),
      ],
    });
    const ran: string[] = [];
    const rm = tool({
      inputSchema: z.object({ path: z.string() }),
      needsApproval: true,
      execute: async ({ path }) => {
        ran.push(path);
        return "removed";
      },
    });
    const { ask, final } = await approveOnce(aiSdkRuntime({ model, tools: { rm }, generateTitle: false }), "approve");
    expect(ask).toMatchObject({ kind: "approval", tool: { name: "rm", args: { path: "/tmp/build" } } });
    expect(ran).toEqual(["/tmp/build"]);
    expect(final.final_text).toBe("All done.");
  });
});
