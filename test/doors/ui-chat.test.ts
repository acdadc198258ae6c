// POST /api/chat and its resume, read by the ai package's own DefaultChatTransport (which checks
// every chunk against its schema) and readUIMessageStream: a useChat front end's conversation is a
// lane of the same conversations the WebSocket devices see.
import { describe, expect, test } from "vitest";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import type { RuntimeEvent, TurnInput } from "chat-gateway";
import { Client } from "../gateway/harness.js";
import { gate, scriptedRuntime } from "../gateway/runtimes.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

function transport(server: DoorServer): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport({ api: `${server.origin}/api/chat`, headers: { authorization: "Bearer k" } });
}

function user(id: string, text: string): UIMessage {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

async function chunksOf(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

async function lastMessage(chunks: UIMessageChunk[]): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  for await (const message of readUIMessageStream({ stream })) last = message;
  return last;
}

describe("/api/chat", () => {
  test("a new chat id is bound to a new thread; its next message goes to the same thread", async () => {
    const server = await start();
    const phone = await Client.connect(server.wsUrl);
    const t = transport(server);
    const first = await chunksOf(
      await t.sendMessages({
        chatId: "my-chat-1",
        messages: [user("u1", "hello ui")],
        trigger: "submit-message",
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    expect(first[0]).toMatchObject({ type: "start" });
    expect(first.map((c) => c.type)).toContain("text-delta");
    expect(first.at(-1)!.type).toBe("finish");
    const answer = await lastMessage(first);
    const text = answer!.parts
      .filter((p) => p.type === "text")
      .map((p) => (p as { text: string }).text)
      .join("");
    expect(text).toBe("You said: hello ui");
    const second = await chunksOf(
      await t.sendMessages({
        chatId: "my-chat-1",
        messages: [
          user("u1", "hello ui"),
          { id: answer!.id, role: "assistant", parts: [{ type: "text", text }] },
          user("u2", "again"),
        ],
        trigger: "submit-message",
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    expect(second.at(-1)!.type).toBe("finish");
    // The phone reads over TCP, the door in process: its copy of the echo may come a moment later.
    await phone.waitFor((f) => f.type === "message" && f.payload.text === "again");
    const echoes = phone.frames.filter((f) => f.type === "message" && f.payload.role === "user");
    expect(echoes.map((f) => f.payload.text)).toEqual(["hello ui", "again"]);
    expect(echoes[0].payload.thread_id).not.toBeNull();
    expect(echoes[1].payload.thread_id).toBe(echoes[0].payload.thread_id);
    // The same request again (a retry) asks nothing twice.
    await chunksOf(
      await t.sendMessages({
        chatId: "my-chat-1",
        messages: [user("u1", "hello ui")],
        trigger: "submit-message",
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    // A request the phone answers after everything the retry could have stored: still two.
    await phone.request("channel.list", {});
    expect(phone.frames.filter((f) => f.type === "message" && f.payload.role === "user")).toHaveLength(2);
    await phone.close();
  });

  test("tool calls come as their parts; resume streams a running answer from its start, else 204", async () => {
    const held = gate();
    const runtime = scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
      yield { type: "tool-start", id: "c1", name: "clock", args: {} };
      yield { type: "tool-end", id: "c1", output: "noon", ok: true };
      yield { type: "text", delta: "It is noon. " };
      await Promise.race([held.wait, new Promise((r) => input.signal.addEventListener("abort", r))]);
      yield { type: "text", delta: "Done." };
    });
    const server = await start({ runtime });
    const t = transport(server);
    const phone = await Client.connect(server.wsUrl);
    const stream = await t.sendMessages({
      chatId: "default",
      messages: [user("q1", "time?")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    const reading = chunksOf(stream);
    await phone.waitFor((f) => f.type === "message.update");
    const resumed = await t.reconnectToStream({ chatId: "default" });
    expect(resumed).not.toBeNull();
    const resumedChunks = chunksOf(resumed!);
    held.release();
    for (const chunks of [await reading, await resumedChunks]) {
      const types = chunks.map((c) => c.type);
      expect(types).toContain("tool-input-available");
      expect(types).toContain("tool-output-available");
      expect(types.at(-1)).toBe("finish");
      const message = await lastMessage(chunks);
      const text = message!.parts
        .filter((p) => p.type === "text")
        .map((p) => (p as { text: string }).text)
        .join("");
      expect(text).toBe("It is noon. Done.");
    }
    expect(await t.reconnectToStream({ chatId: "default" })).toBeNull();
    await phone.close();
  });
});
