// The ACP bridge end to end: the real binary on stdio, the ACP SDK's client as the editor, a real
// gateway behind it (docs/PROTOCOL.md §20.1).
import { describe, expect, test } from "vitest";
import type { RuntimeEvent, TurnInput } from "chat-gateway";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { png } from "../fixtures/png.js";
import { Client } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { eventually, initialize, perTest, textOf } from "./acp-harness.js";

const setup = perTest();

/** What the agent does, by the prompt's first word. */
async function* agentTurn(input: TurnInput): AsyncIterable<RuntimeEvent> {
  const word = input.message.text.split(/\s/)[0];
  if (word === "tools") {
    yield { type: "reasoning", delta: "Let me " };
    yield { type: "reasoning", delta: "look." };
    yield { type: "tool-start", id: "a", name: "search", args: { q: "acp" }, preview: "search acp" };
    yield { type: "tool-end", id: "a", output: "3 hits", ok: true };
    yield { type: "tool-start", id: "b", name: "open", args: { path: "/nope" }, preview: "open /nope" };
    yield { type: "tool-end", id: "b", output: "no such file", ok: false };
    yield { type: "text", delta: "Found " };
    yield { type: "text", delta: "three." };
    return;
  }
  if (word === "deploy") {
    const answer = await input.ask({
      kind: "approval",
      title: "Deploy?",
      tool: { name: "deploy", args: { env: "prod" } },
    });
    yield { type: "text", delta: answer.option_id === "approve" ? "deployed" : "not deployed" };
    return;
  }
  if (word === "pick") {
    const answer = await input.ask({
      kind: "confirm",
      title: "Which colour?",
      options: [
        { id: "red", label: "Red" },
        { id: "blue", label: "Blue" },
      ],
    });
    yield { type: "text", delta: `colour ${answer.option_id}` };
    return;
  }
  if (word === "ask") {
    const answer = await input.ask({ kind: "confirm", title: "Which branch?", body: "Name it.", allowText: true });
    yield { type: "text", delta: `on ${answer.text}` };
    return;
  }
  if (word === "look") {
    yield { type: "text", delta: input.message.media.map((m) => `${m.kind} ${m.mime}`).join(",") };
    return;
  }
  if (word === "wait") {
    yield { type: "text", delta: "working" };
    await new Promise((resolve) => input.signal.addEventListener("abort", resolve));
    return;
  }
  if (word === "long") {
    yield { type: "text", delta: "x".repeat(200) };
    return;
  }
  if (word === "fail") throw new Error("the model is on fire");
  yield { type: "text", delta: `echo: ${input.message.text}` };
}

describe("chat-gateway acp", () => {
  test("initialize, a new session, and a prompt streamed with reasoning and tool calls", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const bridge = setup.bridge(server.wsUrl);
    const init = await initialize(bridge);
    expect(init.agentCapabilities).toMatchObject({ loadSession: true, promptCapabilities: { image: true } });
    const { sessionId } = await bridge.connection.agent.request("session/new", {
      cwd: "/home/ann/project",
      mcpServers: [],
    });
    expect(sessionId).toMatch(/^default\/.+/);
    const result = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "tools please" }],
    });
    expect(result.stopReason).toBe("end_turn");
    const kinds = bridge.updates.map((n) => n.update.sessionUpdate);
    expect(textOf(bridge.updates, "agent_thought_chunk")).toBe("Let me look.");
    expect(textOf(bridge.updates, "agent_message_chunk")).toBe("Found three.");
    const tools = bridge.updates.map((n) => n.update).filter((u) => u.sessionUpdate.startsWith("tool_call"));
    expect(tools).toMatchObject([
      { sessionUpdate: "tool_call", title: "search acp", status: "in_progress", rawInput: { q: "acp" } },
      {
        sessionUpdate: "tool_call_update",
        status: "completed",
        content: [{ type: "content", content: { text: "3 hits" } }],
      },
      { sessionUpdate: "tool_call", title: "open /nope", status: "in_progress" },
      { sessionUpdate: "tool_call_update", status: "failed" },
    ]);
    expect(kinds.indexOf("tool_call")).toBeLessThan(kinds.indexOf("agent_message_chunk"));
    // The thread is the gateway's: a phone sees the conversation.
    const phone = await Client.connect(server.wsUrl, { token: "ann-token" });
    const [chat, thread] = sessionId.split("/");
    const history = await phone.request("history", { chat_id: chat, thread_id: thread });
    expect(history.payload.messages.map((m: { text: string }) => m.text)).toEqual(["tools please", "Found three."]);
    await phone.close();
  });

  test("session/load replays the lane's history before it answers", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const phone = await Client.connect(server.wsUrl, { token: "ann-token" });
    const thread = await phone.request("channel.create", {
      name: "from the phone",
      kind: "thread",
      parent_chat_id: "default",
    });
    const lane = { chat_id: "default", thread_id: thread.payload.chat_id };
    await phone.say({ ...lane, text: "hello there" });
    await phone.say({ ...lane, text: "tools now" });
    await phone.close();
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const sessionId = `default/${lane.thread_id}`;
    const listed = await bridge.connection.agent.request("session/list", {});
    expect(listed.sessions.map((s) => s.sessionId)).toContain(sessionId);
    await bridge.connection.agent.request("session/load", { sessionId, cwd: "/tmp", mcpServers: [] });
    const replay = bridge.updates.map((n) => n.update.sessionUpdate);
    expect(replay).toEqual([
      "user_message_chunk",
      "agent_message_chunk",
      "user_message_chunk",
      "agent_thought_chunk",
      "tool_call",
      "tool_call_update",
      "tool_call",
      "tool_call_update",
      "agent_message_chunk",
    ]);
    expect(textOf(bridge.updates, "user_message_chunk")).toBe("hello theretools now");
    const next = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "again" }],
    });
    expect(next.stopReason).toBe("end_turn");
    expect(textOf(bridge.updates, "agent_message_chunk")).toContain("echo: again");
  });

  test("an approval becomes session/request_permission: allow, then reject", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    const allowed = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "deploy" }],
    });
    expect(allowed.stopReason).toBe("end_turn");
    expect(bridge.permissions[0]).toMatchObject({
      sessionId,
      toolCall: { title: "Deploy?", rawInput: { env: "prod" } },
      options: [
        { optionId: "approve", kind: "allow_once" },
        { optionId: "deny", kind: "reject_once" },
      ],
    });
    expect(textOf(bridge.updates, "agent_message_chunk")).toBe("deployed");
    bridge.answerPermissions(async (request) => ({
      outcome: { outcome: "selected", optionId: request.options.find((o) => o.kind === "reject_once")!.optionId },
    }));
    const before = bridge.updates.length;
    await bridge.connection.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "deploy" }] });
    expect(textOf(bridge.updates.slice(before), "agent_message_chunk")).toBe("not deployed");
    // A question with options is asked the same way.
    const third = bridge.updates.length;
    bridge.answerPermissions(async () => ({ outcome: { outcome: "selected", optionId: "blue" } }));
    await bridge.connection.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "pick" }] });
    expect(bridge.permissions[2]!.options.map((o) => o.optionId)).toEqual(["red", "blue"]);
    expect(textOf(bridge.updates.slice(third), "agent_message_chunk")).toBe("colour blue");
  });

  test("a late choice after the phone answered changes nothing", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const phone = await Client.connect(server.wsUrl, { token: "ann-token", caps: { pickers: true } });
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    bridge.answerPermissions(async (request) => {
      const card = await phone.waitFor((f) => f.type === "picker.approval", 20_000);
      await phone.request("picker.select", { picker_id: card.payload.picker_id, option_id: "deny" });
      return { outcome: { outcome: "selected", optionId: request.options[0]!.optionId } };
    });
    const result = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "deploy" }],
    });
    expect(result.stopReason).toBe("end_turn");
    expect(textOf(bridge.updates, "agent_message_chunk")).toBe("not deployed");
    await phone.request("channel.list", {});
    const resolved = phone.of("picker.resolved");
    expect(resolved).toHaveLength(1);
    expect(resolved[0]!.payload).toMatchObject({ outcome: "selected", option_id: "deny" });
    await phone.close();
  });

  test("session/cancel stops the turn: cancelled; another device's message is shown", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    const [chat_id, thread_id] = sessionId.split("/");
    const prompt = bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "wait" }],
    });
    await eventually(() => textOf(bridge.updates, "agent_message_chunk") === "working");
    const phone = await Client.connect(server.wsUrl, { token: "ann-token" });
    await phone.request("message.send", { chat_id, thread_id, text: "from my phone" });
    await eventually(() => textOf(bridge.updates, "user_message_chunk") === "from my phone");
    await bridge.connection.agent.notify("session/cancel", { sessionId });
    expect((await prompt).stopReason).toBe("cancelled");
    await phone.close();
  });

  test("the gateway's limit is max_tokens, a failed answer a JSON-RPC error", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn), { maxAnswerChars: 100 } as never);
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    const long = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "long" }],
    });
    expect(long.stopReason).toBe("max_tokens");
    await expect(
      bridge.connection.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "fail" }] }),
    ).rejects.toThrow(/on fire/);
    await expect(
      bridge.connection.agent.request("session/prompt", {
        sessionId: "default/nope",
        prompt: [{ type: "text", text: "hi" }],
      }),
    ).rejects.toMatchObject({ code: -32002 });
  });

  test("a free-text question is shown as an agent message and answered from the phone", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const phone = await Client.connect(server.wsUrl, { token: "ann-token", caps: { pickers: true } });
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    const prompt = bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "ask" }],
    });
    const card = await phone.waitFor((f) => f.type === "picker.confirm", 20_000);
    await eventually(() => textOf(bridge.updates, "agent_message_chunk").includes("Which branch?"));
    expect(bridge.permissions).toEqual([]);
    await phone.request("picker.select", { picker_id: card.payload.picker_id, text: "main" });
    expect((await prompt).stopReason).toBe("end_turn");
    expect(textOf(bridge.updates, "agent_message_chunk")).toMatch(/Which branch\?[\s\S]*Name it\.[\s\S]*on main$/);
    await phone.close();
  });

  test("an image in the prompt reaches the agent as media", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn), { mediaStore: memoryMediaStore() });
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    const result = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "look" },
        { type: "image", mimeType: "image/png", data: png(4, 4).toString("base64") },
      ],
    });
    expect(result.stopReason).toBe("end_turn");
    expect(textOf(bridge.updates, "agent_message_chunk")).toBe("image image/png");
  });

  test("session/cancel of a prompt still waiting in the lane's queue deletes it: it never runs", async () => {
    const server = await setup.gateway(scriptedRuntime(agentTurn));
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    const [chat_id, thread_id] = sessionId.split("/");
    const phone = await Client.connect(server.wsUrl, { token: "ann-token" });
    await phone.request("message.send", { chat_id, thread_id, text: "wait here" });
    await phone.waitFor((f) => f.type === "message.start", 20_000);
    const prompt = bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "queued" }],
    });
    await phone.waitFor((f) => f.type === "lane.queue" && f.payload.message_ids.length === 1, 20_000);
    await bridge.connection.agent.notify("session/cancel", { sessionId });
    expect((await prompt).stopReason).toBe("cancelled");
    await phone.request("turn.stop", { chat_id, thread_id });
    const history = await phone.request("history", { chat_id, thread_id });
    expect(history.payload.messages.map((m: { text: string }) => m.text)).toEqual(["wait here", "working"]);
    await phone.close();
  });
});
