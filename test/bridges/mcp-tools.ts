// The checks both MCP transports run: the same five tools through the SDK's own client, whichever
// way it reaches the gateway (the stdio binary, or /mcp over Streamable HTTP).
import { expect } from "vitest";
import type { Client } from "@modelcontextprotocol/client";
import { Client as Device } from "../gateway/harness.js";
import type { McpTestServer } from "./mcp-harness.js";

type Result = Awaited<ReturnType<Client["callTool"]>>;

/** A tool's text. */
export function textOf(result: Result): string {
  return (result.content as Array<{ type: string; text: string }>).map((c) => c.text).join("");
}

/** The structured data of a tool's result. */
export function dataOf(result: Result): Record<string, any> {
  return result.structuredContent as Record<string, any>;
}

/** Lists the five tools, each with an object input schema. */
export async function checkToolList(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual([
    "answer_ask",
    "list_conversations",
    "list_open_asks",
    "read_conversation",
    "send_message",
  ]);
  for (const tool of tools) expect(tool.inputSchema.type).toBe("object");
  const send = tools.find((t) => t.name === "send_message");
  expect(send?.inputSchema.required).toEqual(["text"]);
}

/**
 * send_message into a new thread reports progress before its answer ends (the agent waits until
 * the test saw progress), and the thread is then listed and read, also from a phone.
 */
export async function checkSendReadList(client: Client, server: McpTestServer): Promise<void> {
  const progress: string[] = [];
  const sent = await client.callTool(
    { name: "send_message", arguments: { text: "stream done" } },
    {
      onprogress: (p) => {
        progress.push(String(p.message));
        server.release();
      },
    },
  );
  expect(sent.isError).toBeFalsy();
  expect(textOf(sent)).toBe("first done");
  expect(progress[0]).toBe("first ");
  const lane = dataOf(sent).lane as string;
  expect(lane).toMatch(/^[^/]+\/[^/]+$/);
  expect(dataOf(sent)).toMatchObject({ status: "complete", text: "first done" });

  const listed = await client.callTool({ name: "list_conversations", arguments: {} });
  const conversations = dataOf(listed).conversations as Array<{ lane: string; title: string }>;
  expect(conversations.map((c) => c.lane)).toContain(lane);
  expect(textOf(listed)).toContain(lane);

  const again = await client.callTool({ name: "send_message", arguments: { lane, text: "hi" } });
  expect(textOf(again)).toBe("echo: hi");
  const read = await client.callTool({ name: "read_conversation", arguments: { lane, limit: 10 } });
  const messages = dataOf(read).messages as Array<{ role: string; text: string }>;
  expect(messages.map((m) => [m.role, m.text])).toEqual([
    ["user", "stream done"],
    ["assistant", "first done"],
    ["user", "hi"],
    ["assistant", "echo: hi"],
  ]);
  const phone = await Device.connect(server.wsUrl, { token: "ann" });
  const [chatId, threadId] = lane.split("/");
  const history = await phone.request("history", { chat_id: chatId, thread_id: threadId });
  expect((history.payload.messages as unknown[]).length).toBe(4);
  await phone.close();
}

/**
 * An ask raised by send_message is reported as progress, listed, answered with answer_ask, and the
 * answer goes on.
 */
export async function checkAsk(client: Client): Promise<void> {
  let asked!: (message: string) => void;
  const waiting = new Promise<string>((resolve) => (asked = resolve));
  const sending = client.callTool(
    { name: "send_message", arguments: { text: "deploy" } },
    {
      onprogress: (p) => (String(p.message).startsWith("waiting for an answer") ? asked(String(p.message)) : undefined),
    },
  );
  const said = await waiting;
  const asks = dataOf(await client.callTool({ name: "list_open_asks", arguments: {} })).asks as Array<
    Record<string, any>
  >;
  expect(asks).toHaveLength(1);
  expect(asks[0]).toMatchObject({ kind: "approval", title: "Deploy?" });
  expect(said).toContain(asks[0].picker_id);
  const pickerId = asks[0].picker_id as string;
  const bad = await client.callTool({ name: "answer_ask", arguments: { picker_id: pickerId, option_id: "nope" } });
  expect(bad.isError).toBe(true);
  expect(dataOf(bad).error.code).toBe("unsupported");
  const answered = await client.callTool({
    name: "answer_ask",
    arguments: { picker_id: pickerId, option_id: "approve" },
  });
  expect(dataOf(answered)).toMatchObject({ outcome: "selected", option_id: "approve" });
  expect(textOf(await sending)).toBe("deployed");
  expect(dataOf(await client.callTool({ name: "list_open_asks", arguments: {} })).asks).toEqual([]);
}

/** A lane that does not exist, and another owner's lane, are isError results with not_found. */
export async function checkBadLanes(client: Client, server: McpTestServer): Promise<void> {
  const bob = await Device.connect(server.wsUrl, { token: "bob" });
  const created = await bob.request("channel.create", { name: "bobs", kind: "channel" });
  const bobs = created.payload.chat_id as string;
  await bob.close();
  for (const lane of ["nowhere", "a/b/c", bobs]) {
    const read = await client.callTool({ name: "read_conversation", arguments: { lane } });
    expect(read.isError).toBe(true);
    expect(dataOf(read).error.code).toBe("not_found");
    const sent = await client.callTool({ name: "send_message", arguments: { lane, text: "x" } });
    expect(sent.isError).toBe(true);
    expect(textOf(sent)).toMatch(/^not_found: /);
  }
}
